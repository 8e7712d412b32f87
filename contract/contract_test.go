package contract

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// build makes a timeline with a warmup phase of n good DB reads and a fault
// phase of n requests where bad(i) decides which are broken.
func build(n int, bad func(i int) bool, hits int64) *timeline.Timeline {
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "s", Start: t0}}
	tl.Events = append(tl.Events,
		timeline.Event{Time: t0, Kind: timeline.PhaseStart, Phase: "warmup"},
		timeline.Event{Time: t0.Add(time.Second), Kind: timeline.PhaseEnd, Phase: "warmup"},
		timeline.Event{Time: t0.Add(time.Second), Kind: timeline.PhaseStart, Phase: "fault"},
		timeline.Event{Time: t0.Add(time.Second), Kind: timeline.FaultOn, Phase: "fault", Point: "svc/store/q"},
	)
	body := func(i int) string { return fmt.Sprintf(`{"id":%d}`, i%10) }
	for i := 0; i < n; i++ {
		tl.Requests = append(tl.Requests, timeline.Request{Seq: uint64(i), Phase: "warmup", Time: t0.Add(time.Duration(i) * time.Second / time.Duration(n)),
			Target: fmt.Sprintf("GET /p/%d", i%10), Status: 200, Latency: time.Millisecond, Body: body(i), Headers: map[string]string{"X-Served-From": "db"}})
	}
	for i := 0; i < n; i++ {
		r := timeline.Request{Seq: uint64(n + i), Phase: "fault", Time: t0.Add(time.Second + time.Duration(i)*time.Second/time.Duration(n)),
			Target: fmt.Sprintf("GET /p/%d", i%10), Status: 200, Latency: 2 * time.Millisecond, Body: body(i), Headers: map[string]string{"X-Served-From": "cache"}}
		if bad(i) {
			r.Status, r.Body, r.Latency = 503, "", 300*time.Millisecond
			r.Headers = map[string]string{"X-Served-From": "none"}
		}
		tl.Requests = append(tl.Requests, r)
	}
	tl.Events = append(tl.Events,
		timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.FaultOff, Phase: "fault", Point: "svc/store/q"},
		timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.FaultHits, Phase: "fault", Point: "svc/store/q", Hits: &hits},
		timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.PhaseEnd, Phase: "fault"},
	)
	return tl
}

func TestEvaluate(t *testing.T) {
	none := func(int) bool { return false }
	tests := []struct {
		name     string
		spec     Spec
		tl       *timeline.Timeline
		want     Outcome
		measured string
	}{
		{"all served from cache", Spec{Phase: "fault", Expect: []string{`status == 200 for >= 99%`, `header("X-Served-From") == "cache" for >= 99%`}},
			build(200, none, 10), Pass, "100% (200/200)"},
		{"5% broken fails 99%", Spec{Phase: "fault", Expect: []string{`status == 200 for >= 99%`}},
			build(200, func(i int) bool { return i%20 == 0 }, 10), Fail, "95% (190/200)"},
		{"5% broken passes 90%", Spec{Phase: "fault", Expect: []string{`status == 200 for >= 90%`}},
			build(200, func(i int) bool { return i%20 == 0 }, 10), Pass, "95% (190/200)"},
		{"settle skips the broken start", Spec{Phase: "fault", Settle: 100 * time.Millisecond, Expect: []string{`status == 200 for >= 99%`}},
			build(200, func(i int) bool { return i < 20 }, 10), Pass, "100% (180/180)"},
		{"same start without settle fails", Spec{Phase: "fault", Expect: []string{`status == 200 for >= 99%`}},
			build(200, func(i int) bool { return i < 20 }, 10), Fail, "90% (180/200)"},
		{"baseline equality passes", Spec{Phase: "fault", Expect: []string{`body == baseline("warmup") for >= 99%`}},
			build(200, none, 10), Pass, "100% (200/200)"},
		{"baseline equality fails on empty bodies", Spec{Phase: "fault", Expect: []string{`body == baseline("warmup") for >= 99%`}},
			build(200, func(i int) bool { return i%2 == 0 }, 10), Fail, "50% (100/200)"},
		{"baseline of a phase without the target is nil", Spec{Phase: "fault", Expect: []string{`body == baseline("nope") for >= 1%`}},
			build(200, none, 10), Inconclusive, "0%..100% (0..200/200)"},
		{"latency with duration literal", Spec{Phase: "fault", Expect: []string{`latency < 50ms for >= 99%`}},
			build(200, func(i int) bool { return i%4 == 0 }, 10), Fail, "75% (150/200)"},
		{"upper bound quantifier", Spec{Phase: "fault", Expect: []string{`status >= 500 for <= 5%`}},
			build(200, func(i int) bool { return i%20 == 0 }, 10), Pass, "5% (10/200)"},
		{"too few samples", Spec{Phase: "fault", Expect: []string{`status == 200 for >= 99%`}},
			build(20, none, 10), Inconclusive, "100% (20/20)"},
		{"min_samples lowered", Spec{Phase: "fault", MinSamples: 10, Expect: []string{`status == 200 for >= 99%`}},
			build(20, none, 10), Pass, "100% (20/20)"},
		{"fault never fired", Spec{Phase: "fault", Expect: []string{`status == 200 for >= 99%`}},
			build(200, none, 0), Inconclusive, "100% (200/200)"},
		{"unfired fault does not touch the warmup window", Spec{Phase: "warmup", Expect: []string{`status == 200 for >= 99%`}},
			build(200, none, 0), Pass, "100% (200/200)"},
		{"phase that never ran", Spec{Phase: "ghost", Expect: []string{`status == 200 for >= 99%`}},
			build(200, none, 10), Inconclusive, "no data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = tt.name
			c, err := Compile(conv(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			if v.Outcome != tt.want || v.Measured != tt.measured {
				t.Errorf("verdict %s measured %q (reason %q); want %s %q", v.Outcome, v.Measured, v.Reason, tt.want, tt.measured)
			}
		})
	}
}

// TestUnfiredReason checks that a marker that never fired is explained by
// what the target said about its build before the run: a live build means
// the code path was not taken, anything else that the build may be plain.
func TestUnfiredReason(t *testing.T) {
	live, inert := true, false
	for _, tt := range []struct {
		name    string
		probe   *bool
		want    string
		notWant string
	}{
		{"live build", &live, "the build is live (its fault-injection probe fired before the run), so no request reached the marker: the code path was not taken", "without failpoint rewriting"},
		{"inert build", &inert, "the service said its failpoint markers are inert: it was built without failpoint rewriting", "code path"},
		{"could not tell", nil, "the service may be built without failpoint rewriting (the run has no record that its markers were live)", "code path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tl := build(200, func(int) bool { return false }, 0)
			tl.Meta.FaultInjection = tt.probe
			c, err := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{`status == 200 for >= 99%`}}))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tl)
			if v.Outcome != Inconclusive || !strings.HasPrefix(v.Reason, `fault svc/store/q was on in phase "fault" but its marker never fired; `) ||
				!strings.Contains(v.Reason, tt.want) || strings.Contains(v.Reason, tt.notWant) {
				t.Errorf("%s: %q; want it to say %q", v.Outcome, v.Reason, tt.want)
			}
		})
	}
}

func TestViolationEvidence(t *testing.T) {
	c, _ := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{`status == 200 for >= 99%`}}))
	v := c.Evaluate(build(200, func(i int) bool { return i%20 == 0 }, 10))
	got := v.Checks[0].Violations
	if len(got) != MaxViolations {
		t.Fatalf("violations = %d, want %d", len(got), MaxViolations)
	}
	if got[0].Status != 503 || got[0].Source != "none" || got[0].Target != "GET /p/0" || len(got[0].Faults) != 1 || got[0].Faults[0] != "svc/store/q" {
		t.Errorf("first violation = %+v", got[0])
	}
	if got[1].Offset != 100*time.Millisecond {
		t.Errorf("second violation offset = %v", got[1].Offset)
	}
}

func TestDecisiveCheck(t *testing.T) {
	c, _ := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{`status == 200 for >= 50%`, `status == 200 for >= 94%`}}))
	v := c.Evaluate(build(200, func(i int) bool { return i%20 == 0 }, 10))
	if v.Outcome != Pass || v.Expected != ">= 94%" {
		t.Errorf("decisive = %s %s, want the closest check >= 94%%", v.Outcome, v.Expected)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		expect string
		col    int
		msg    string
	}{
		{`status == 200`, 1, "has no quantifier"},
		{`statsu == 200 for >= 99%`, 1, "unknown name statsu"},
		{`status == "x" for >= 99%`, 8, "mismatched types"},
		{`status for >= 99%`, 1, "expected bool"},
		{`status == 200 for >= 101%`, 22, "above 100%"},
	}
	for _, tt := range tests {
		_, err := Compile(conv(Spec{Name: "c", Expect: []string{"status == 200 for >= 1%", tt.expect}}))
		var ee *ExpectError
		var se *SyntaxError
		if !errors.As(err, &ee) || !errors.As(err, &se) {
			t.Errorf("%q: err = %v", tt.expect, err)
			continue
		}
		if ee.Index != 1 || se.Column != tt.col || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("%q: index %d col %d msg %q; want 1, %d, %q", tt.expect, ee.Index, se.Column, se.Msg, tt.col, tt.msg)
		}
	}
}

func TestRewriteDurations(t *testing.T) {
	for in, want := range map[string]string{
		`latency < 150ms`:                `latency < duration("150ms")`,
		`latency < 1.5s && body == "3s"`: `latency < duration("1.5s") && body == "3s"`,
		`header("X") == '2m' || 2m > 1s`: `header("X") == '2m' || duration("2m") > duration("1s")`,
		`status == 200`:                  `status == 200`,
		`body == "unterminated 5s`:       `body == "unterminated 5s`,
	} {
		if got := rewriteDurations(in); got != want {
			t.Errorf("rewriteDurations(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOverall(t *testing.T) {
	for _, tt := range []struct {
		in   []Outcome
		want Outcome
	}{{nil, Inconclusive}, {[]Outcome{Pass, Pass}, Pass}, {[]Outcome{Pass, Inconclusive}, Inconclusive}, {[]Outcome{Inconclusive, Fail}, Fail}} {
		var vs []Verdict
		for _, o := range tt.in {
			vs = append(vs, Verdict{Outcome: o})
		}
		if got := Overall(vs, nil); got != tt.want {
			t.Errorf("Overall(%v) = %s, want %s", tt.in, got, tt.want)
		}
		// A run that failed shows nothing passed: only a fail stands.
		want := Inconclusive
		if tt.want == Fail {
			want = Fail
		}
		if got := Overall(vs, errors.New("the target exited")); got != want {
			t.Errorf("Overall(%v) after a run error = %s, want %s", tt.in, got, want)
		}
	}
}
