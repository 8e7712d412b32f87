package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestMissingData holds one row per line of the missing-data table in
// docs/contracts.md: what each predicate and figure answers when the data
// it reads is not there. None of them passes on what it could not read.
func TestMissingData(t *testing.T) {
	textBody := func(r *timeline.Request) { r.Body, r.BodySize = "temporarily degraded", 20 }
	bigBody := func(r *timeline.Request) { r.Body, r.BodySize = "", timeline.MaxBody+1 }
	noAge := func(r *timeline.Request) {
		served(r, 200, "cache", time.Millisecond)
		delete(r.Headers, "X-Copy-Age")
	}
	// dropMetrics removes the metric samples between from and to (offsets
	// from the run's start): the endpoint did not answer then.
	dropMetrics := func(s *shop, from, to time.Duration) *timeline.Timeline {
		var keep []timeline.Event
		for _, e := range s.tl.Events {
			if (e.Kind == timeline.Metrics || e.Kind == timeline.State) && e.Time.After(t0.Add(from)) && e.Time.Before(t0.Add(to)) {
				continue
			}
			keep = append(keep, e)
		}
		s.tl.Events = keep
		return s.tl
	}
	counter := func(s *shop) *shop {
		for at := time.Duration(0); at <= 3*time.Second; at += 100 * time.Millisecond {
			s.event(timeline.Event{Time: t0.Add(at), Kind: timeline.State, Data: map[string]any{"db": map[string]any{"calls": float64(at / time.Millisecond)}}})
		}
		return s
	}
	// calls adds readings of probe calls every 100ms from from to +3s,
	// value(at) each (< 0: the reading failed).
	calls := func(from time.Duration, value func(at time.Duration) float64) *timeline.Timeline {
		s := newShop(10, normal)
		for at := from; at <= 3*time.Second; at += 100 * time.Millisecond {
			e := timeline.Event{Time: t0.Add(at), Kind: timeline.Probe, Message: "calls", Data: map[string]any{"took_ns": float64(time.Millisecond)}}
			if v := value(at); v >= 0 {
				e.Data["value"] = v
			} else {
				e.Data["error"] = "connection refused"
			}
			s.event(e)
		}
		return s.tl
	}
	perSecond := func(n float64, bad ...time.Duration) func(time.Duration) float64 {
		return func(at time.Duration) float64 {
			for _, b := range bad {
				if at == b {
					return -1
				}
			}
			return 1000 + n*at.Seconds()
		}
	}
	const upstreamBudget = `increase(probe("calls")) <= 1.2 * count`
	ok := newShop(10, normal).tl
	tests := []struct {
		row    string
		spec   Spec
		tl     *timeline.Timeline
		want   Outcome
		substr string // in the measured figure, the reason or the first violation's detail
	}{
		{"absent header reads as empty", Spec{Expect: []string{`header("X-Cache") == "HIT" for >= 99%`}}, ok, Fail, "0% (0/100)"},
		{"body not JSON breaks json()", Spec{Expect: []string{`json("degraded") != true for == 100%`}}, newShop(10, faultPhase(all, textBody)).tl, Fail, `json("degraded"): the body is not JSON`},
		{"body not kept breaks json()", Spec{Expect: []string{`json("degraded") != true for == 100%`}}, newShop(10, faultPhase(all, bigBody)).tl, Fail, "was not kept"},
		{"no body breaks json()", Spec{Expect: []string{`json("id") >= 0 for == 100%`}}, newShop(10, faultPhase(every(2), slow503)).tl, Fail, "the response has no body"},
		{"a path the JSON body lacks is nil", Spec{Expect: []string{`json("missing") == nil for == 100%`}}, ok, Pass, "100% (100/100)"},
		{"no baseline body leaves baseline() unknown", Spec{Expect: []string{`body != baseline("warmup") for == 100%`}}, func() *timeline.Timeline {
			tl := newShop(10, normal).tl
			for i := range tl.Requests {
				if tl.Requests[i].Phase == "warmup" {
					tl.Requests[i].Target = "GET /other"
				}
			}
			return tl
		}(), Inconclusive, `have nothing to compare with, so the share is between 0% and 100% (no baseline: GET /products/`},
		{"no baseline for some targets, the rest decide", Spec{Expect: []string{`body != baseline("warmup") for == 100%`}}, func() *timeline.Timeline {
			tl := newShop(10, normal).tl
			first := tl.Requests[0].Target
			for i := range tl.Requests {
				if tl.Requests[i].Phase == "warmup" && tl.Requests[i].Target == first {
					tl.Requests[i].Target = "GET /other"
				}
			}
			return tl
		}(), Fail, `0%..`},
		{"unparsable age fails stale", Spec{Expect: []string{`stale <= 30s`}}, newShop(10, faultPhase(every(2), badAge("soon"))).tl, Fail, "state no age"},
		{"unparsable age breaks age predicates", Spec{Expect: []string{`age >= 0s for == 100%`}}, newShop(10, faultPhase(every(2), badAge("-5"))).tl, Fail, "50% (50/100)"},
		{"fallbacks that state no age leave stale unknown", Spec{Expect: []string{`stale <= 30s`}}, newShop(10, faultPhase(all, noAge)).tl, Inconclusive, "none states an age"},
		{"no copy served passes stale", Spec{Phase: "warmup", Expect: []string{`stale <= 30s`}}, ok, Pass, "no copies served"},
		{"absent metric", Spec{Phase: "recovery", Expect: []string{`rate(process_cpu_seconds_total) <= 0.5`}}, ok, Inconclusive, "fewer than two metric samples"},
		{"gap in metric samples", Spec{Phase: "recovery", Expect: []string{`max(process_cpu_seconds_total) <= 100`}},
			dropMetrics(newShop(10, normal).cpu(spin), 2200*time.Millisecond, 2900*time.Millisecond), Inconclusive, "leave a gap of 700ms (from +200ms)"},
		{"gap in metric samples of a baseline", Spec{Phase: "recovery", Expect: []string{`rate(process_cpu_seconds_total) <= 2 * baseline("warmup")`}},
			dropMetrics(newShop(10, normal).cpu(spin), 100*time.Millisecond, 900*time.Millisecond), Inconclusive, `baseline("warmup") has no figure`},
		{"gap in breaker samples", Spec{Phase: "recovery", Expect: []string{`breaker("db") never opens`}},
			dropMetrics(newShop(10, normal).breaker(breakerOpen(time.Hour, time.Hour)), 2300*time.Millisecond, 3100*time.Millisecond), Inconclusive, "leave a gap of 700ms (from +300ms)"},
		{"gap in state counter samples", Spec{Phase: "recovery", Expect: []string{`increase("db.calls") <= 10 * count`}},
			dropMetrics(counter(newShop(10, normal)), 2100*time.Millisecond, 2800*time.Millisecond), Inconclusive, "leave a gap of"},
		{"state counters sampled throughout", Spec{Phase: "recovery", Expect: []string{`increase("db.calls") <= 10 * count`}}, counter(newShop(10, normal)).tl, Pass, "1000"},
		{"no answer of the Prometheus server", Spec{Expect: []string{"max(promql(`errors`)) <= 5"}},
			newShop(10, normal).event(timeline.Event{Kind: timeline.PromQL, Message: "errors", Data: map[string]any{"error": "prometheus: dial tcp 127.0.0.1:9: connect: connection refused"}}).tl,
			Inconclusive, "could not evaluate promql(`errors`): prometheus: dial tcp"},
		{"an empty PromQL result", Spec{Expect: []string{"max(promql(`errors`)) <= 5"}}, newShop(10, normal).promqlAnswer("errors").tl, Inconclusive, "gave no sample in the window"},
		{"several PromQL series", Spec{Expect: []string{"max(promql(`errors`)) <= 5"}},
			newShop(10, normal).promqlAnswer("errors", promqlSeries{map[string]any{"code": "500"}, steps("1", "2", "3")}, promqlSeries{map[string]any{"code": "503"}, steps("1", "2", "3")}).tl,
			Inconclusive, "gave 2 series at +0s"},
		{"a gap in the PromQL points", Spec{Expect: []string{"max(promql(`errors`)) <= 5"}},
			newShop(10, normal).promqlAnswer("errors", promqlSeries{map[string]any{}, []string{"1", "1", "1", "1", "1", "1", "", "", "", "2", "3", "3", "3", "3"}}).tl,
			Inconclusive, "leave a gap of 1s"},
		{"no probe reading before the window", Spec{Expect: []string{upstreamBudget}}, calls(1050*time.Millisecond, perSecond(100)), Inconclusive, "has no reading at or before the window's start"},
		{"an unknown probe reading at an edge", Spec{Expect: []string{upstreamBudget}}, calls(50*time.Millisecond, perSecond(100, 2050*time.Millisecond)), Inconclusive, "could not be read at the window's end (+1.05s): connection refused"},
		{"a probe counter that went down", Spec{Expect: []string{upstreamBudget}}, calls(50*time.Millisecond, func(at time.Duration) float64 {
			if at > 1500*time.Millisecond {
				return 0
			}
			return perSecond(100)(at)
		}), Inconclusive, "the counter was reset"},
		{"a gap in the probe readings", Spec{Expect: []string{upstreamBudget}}, calls(50*time.Millisecond, perSecond(100, 1150*time.Millisecond, 1250*time.Millisecond, 1350*time.Millisecond, 1450*time.Millisecond, 1550*time.Millisecond, 1650*time.Millisecond, 1750*time.Millisecond)), Inconclusive, "leave a gap of 800ms"},
		{"the two ends of a probe's increase disagree", Spec{Expect: []string{upstreamBudget}}, calls(50*time.Millisecond, perSecond(110)), Inconclusive, "grew by 99 to 121 in the window"},
		{"window with too few requests", Spec{MinSamples: 101, Expect: []string{`p99 < 1s`}}, ok, Inconclusive, "fewer than min_samples 101"},
		{"window with no requests", Spec{Requests: Filter{Path: "/none"}, Expect: []string{`fallback >= 99%`}}, ok, Inconclusive, "no requests in the window"},
		{"baseline phase with too few requests", Spec{Expect: []string{`p99 <= 2 * baseline("warmup")`}}, func() *timeline.Timeline {
			tl := newShop(10, normal).tl
			tl.Requests = tl.Requests[95:]
			return tl
		}(), Inconclusive, "rests on 5 requests, fewer than min_samples 50"},
		{"no state samples", Spec{Expect: []string{`breaker("db") opens within 1s`}}, ok, Inconclusive, "no data"},
		{"no route to compare a status shift", Spec{Requests: Filter{Path: "/products/1"}, MinSamples: 5, Expect: []string{`status_shift("5xx") <= 5%`}}, ok, Inconclusive, "no route has 20 requests"},
		{"no fault on for since_fault", Spec{Phase: "warmup", Expect: []string{`age >= since_fault for == 100%`}}, ok, Inconclusive, "no fault to measure from"},
		{"writes never read back", Spec{Expect: []string{`lost_writes == 0`}}, ok, Inconclusive, "read no writes back"},
		{"a verification that could not tell", Spec{Phase: "fault", Expect: []string{`violated_verifications == 0`}}, newShop(10, normal).verified(func(r *timeline.Request, vr *timeline.VerifyResult) {
			if r.Seq%10 == 0 {
				vr.Status = 503
			}
		}).tl, Inconclusive, "violated_verifications is between 0 and 10"},
		{"no verification sent", Spec{Expect: []string{`violated_verifications == 0`}}, ok, Inconclusive, "sent no verification requests"},
		{"fault marker never fired", Spec{Expect: []string{`fallback >= 99%`}}, newShop(0, normal).tl, Inconclusive, "never fired"},
	}
	for _, tt := range tests {
		t.Run(tt.row, func(t *testing.T) {
			tt.spec.Name = tt.row
			if tt.spec.Phase == "" && !strings.Contains(tt.spec.Expect[0], "lost_writes") {
				tt.spec.Phase = "fault"
			}
			c, err := Compile(conv(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			ch := v.Checks[0]
			text := ch.Measured + " | " + ch.Reason + " | " + v.Reason
			if len(ch.Violations) > 0 {
				text += " | " + ch.Violations[0].Detail
			}
			if v.Outcome != tt.want || !strings.Contains(text, tt.substr) {
				t.Errorf("got %s: %s; want %s with %q", v.Outcome, text, tt.want, tt.substr)
			}
		})
	}
}
