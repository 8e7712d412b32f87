package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// cpu adds a metric sample of process_cpu_seconds_total every 100ms over
// the shop's three phases, the counter growing at perSecond(phase).
func (s *shop) cpu(perSecond func(phase string) float64) *shop {
	v := 12.0
	for at := time.Duration(0); at <= 3*time.Second; at += 100 * time.Millisecond {
		phase := []string{"warmup", "fault", "recovery", "recovery"}[at/time.Second]
		if at > 0 {
			v += perSecond(phase) / 10
		}
		s.event(timeline.Event{Time: t0.Add(at), Kind: timeline.Metrics, Data: map[string]any{"metrics": map[string]any{
			"process_cpu_seconds_total": []any{promSeries(map[string]any{}, v)},
		}}})
	}
	return s
}

// spin is a CPU spin after the fault: 0.03 s/s at idle, 0.47 s/s after.
func spin(phase string) float64 {
	if phase == "recovery" {
		return 0.47
	}
	return 0.03
}

func TestBaselines(t *testing.T) {
	ok := newShop(10, normal).tl
	fewWarmup := newShop(10, normal).tl
	fewWarmup.Requests = fewWarmup.Requests[90:] // 10 warmup requests left
	tests := []struct {
		name     string
		spec     Spec
		tl       *timeline.Timeline
		want     Outcome
		measured string
		expected string
		reason   string
	}{
		{"latency within a multiple of the warmup's", Spec{Phase: "fault", Expect: []string{`p99 latency <= 2.5 * baseline("warmup")`}}, ok, Pass,
			"2ms (warmup: 1ms)", `<= 2.5 * baseline("warmup") = 2.5 * 1ms = 2.5ms`, ""},
		{"latency past a multiple of the warmup's", Spec{Phase: "fault", Expect: []string{`p99 latency <= 1.5 * baseline("warmup")`}}, ok, Fail,
			"2ms (warmup: 1ms)", `= 1.5ms`, ""},
		{"a duration added to the baseline", Spec{Phase: "fault", Expect: []string{`p99 <= baseline("warmup") + 500us`}}, ok, Fail,
			"2ms", `= 1ms + 500us = 1.5ms`, ""},
		{"a status share against the warmup's", Spec{Phase: "fault", Expect: []string{`status 5xx <= baseline("warmup") + 1%`}},
			newShop(10, faultPhase(every(10), slow503)).tl, Fail, "10% (10/100) (warmup: 0% (0/100))", `<= baseline("warmup") + 1% = 0% + 1% = 1%`, ""},
		{"a class share against the warmup's", Spec{Phase: "recovery", Expect: []string{`primary >= 0.99 * baseline("warmup")`}}, ok, Pass,
			"100% (100/100) (warmup: 100% (100/100))", "= 99%", ""},
		{"rps against the warmup's", Spec{Phase: "fault", Expect: []string{`rps >= 0.9 * baseline("warmup")`}}, ok, Pass, "100/s (warmup: 100/s)", "= 90", ""},
		{"a CPU spin after the fault", Spec{Phase: "recovery", Expect: []string{`rate(process_cpu_seconds_total) <= 2 * baseline("warmup")`}},
			newShop(10, normal).cpu(spin).tl, Fail, "0.47/s", `<= 2 * baseline("warmup") = 2 * 0.03 = 0.06`, ""},
		{"no spin", Spec{Phase: "recovery", Expect: []string{`rate(process_cpu_seconds_total) <= 2 * baseline("warmup")`}},
			newShop(10, normal).cpu(func(string) float64 { return 0.03 }).tl, Pass, "0.03/s", `= 0.06`, ""},
		{"a baseline phase that did not run", Spec{Phase: "fault", Expect: []string{`p99 latency <= 1.5 * baseline("idle")`}}, ok, Inconclusive,
			"no data", "", `baseline("idle"): phase "idle" did not run`},
		{"a baseline on too few requests", Spec{Phase: "fault", Expect: []string{`p99 latency <= 1.5 * baseline("warmup")`}}, fewWarmup, Inconclusive,
			"no data", "", `baseline("warmup") rests on 10 requests, fewer than min_samples 50`},
		{"a metric baseline without samples", Spec{Phase: "recovery", Expect: []string{`rate(process_cpu_seconds_total) <= 2 * baseline("warmup")`}}, ok, Inconclusive,
			"no data", "", `baseline("warmup") has no figure: fewer than two metric samples`},
		{"status_shift of 5xx counts errors", Spec{Phase: "fault", Expect: []string{`status_shift("5xx") <= 5%`}},
			newShop(10, faultPhase(every(10), slow503)).tl, Fail, "+10 points", "<= 5%", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = tt.name
			c, err := Compile(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			ch := v.Checks[0]
			if ch.Outcome != tt.want || !strings.Contains(ch.Measured, tt.measured) || !strings.Contains(ch.Expected, tt.expected) || !strings.Contains(ch.Reason, tt.reason) {
				t.Errorf("got %s measured %q expected %q reason %q;\nwant %s measured %q expected %q reason %q",
					ch.Outcome, ch.Measured, ch.Expected, ch.Reason, tt.want, tt.measured, tt.expected, tt.reason)
			}
		})
	}
}

func TestBaselineSyntax(t *testing.T) {
	for _, src := range []string{`p99 latency <= 1.5 * baseline("warmup") +`, `rps >= baseline(warmup)`} {
		if _, err := compileCheck(src); err == nil {
			t.Errorf("%s compiles", src)
		}
	}
	refs := PhaseRefs(`p99 <= baseline("warmup") + baseline("idle")`)
	if len(refs) != 2 || refs[0] != (PhaseRef{"warmup", 18}) || refs[1] != (PhaseRef{"idle", 39}) {
		t.Errorf("PhaseRefs = %v", refs)
	}
	if refs := PhaseRefs(`status_shift("4xx", "calm") <= 10%`); len(refs) != 1 || refs[0] != (PhaseRef{"calm", 22}) {
		t.Errorf("PhaseRefs = %v", refs)
	}
}

// TestFourDigits: numbers print with at most four significant digits.
func TestFourDigits(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 0.47000001: "0.47", 0.123456: "0.1235", 1234.5: "1235", 123456: "123500", 17.5: "17.5", -0.0304: "-0.0304", 3: "3"} {
		if got := fmtNum(in); got != want {
			t.Errorf("fmtNum(%v) = %s, want %s", in, got, want)
		}
	}
}
