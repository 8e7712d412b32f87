package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

func TestShortfallMakesInconclusive(t *testing.T) {
	none := func(int) bool { return false }
	for _, tt := range []struct {
		name string
		data map[string]any
		slow bool // every request of the phase takes 2s, all workers busy
		want Outcome
		// reason holds what an inconclusive verdict must say.
		reason []string
	}{
		{"delivered", map[string]any{timeline.PlannedRequests: uint64(200), timeline.SentRequests: int64(200)}, false, Pass, nil},
		{"just enough", map[string]any{timeline.PlannedRequests: uint64(200), timeline.SentRequests: int64(160)}, false, Pass, nil},
		{"fell behind", map[string]any{timeline.PlannedRequests: uint64(200), timeline.SentRequests: int64(150)}, false, Inconclusive,
			[]string{"sent 150 of the 200 requests planned for phase \"fault\" (75%)", "overloaded"}},
		{"read back from disk", map[string]any{timeline.PlannedRequests: float64(200), timeline.SentRequests: float64(100)}, false, Inconclusive, []string{"sent 100 of the 200"}},
		{"no record", nil, false, Pass, nil},
		// A rate no machine sends: the figure, with separators.
		{"absurd rate", map[string]any{timeline.PlannedRequests: uint64(2_000_000_000), timeline.SentRequests: int64(18884)}, false, Inconclusive,
			[]string{"sent 18,884 of the 2,000,000,000 requests", "(0.00094%)"}},
		// Every worker waiting on the service is a shortfall too: the
		// scenario's load was not driven; the hint names max_workers.
		{"workers exhausted", map[string]any{timeline.PlannedRequests: uint64(200), timeline.SentRequests: int64(100), timeline.MaxWorkers: 200}, true, Inconclusive,
			[]string{"sent 100 of the 200", "all 200 workers (max_workers) were waiting on the service"}},
		// The total was sent, but late: stalled (a paused process) and then
		// caught up in a burst.
		{"caught up in a burst", map[string]any{timeline.PlannedRequests: uint64(200), timeline.SentRequests: int64(200),
			timeline.BehindAt: int64(1500 * time.Millisecond), timeline.PlannedBy: uint64(150), timeline.SentBy: uint64(60)}, false, Inconclusive,
			[]string{"fell behind its plan: 1.5s into phase \"fault\" it had sent 60 of the 150 requests planned by then (40%)", "burst"}},
		// chaoskit stopped for 7 s, 10 s into a 40 s phase at 1,000/s:
		// 41 % short of the plan by then, though only 17 % of the phase's.
		{"a stall against the plan by then", map[string]any{timeline.PlannedRequests: uint64(40000), timeline.SentRequests: int64(40000),
			timeline.BehindAt: int64(16880 * time.Millisecond), timeline.PlannedBy: uint64(16880), timeline.SentBy: uint64(9887)}, false, Inconclusive,
			[]string{"16.88s into phase \"fault\" it had sent 9,887 of the 16,880 requests planned by then (59%)"}},
		// Before a second of the phase, a few requests late are no share.
		{"a small lag", map[string]any{timeline.PlannedRequests: uint64(200), timeline.SentRequests: int64(200),
			timeline.BehindAt: int64(10 * time.Millisecond), timeline.PlannedBy: uint64(40), timeline.SentBy: uint64(1)}, false, Pass, nil},
	} {
		tl := build(200, none, 10)
		for i, e := range tl.Events {
			if e.Kind == timeline.PhaseEnd && e.Phase == "fault" && tt.data != nil {
				tl.Events[i].Data = tt.data
			}
		}
		if tt.slow {
			for j := range tl.Requests {
				if tl.Requests[j].Phase == "fault" {
					tl.Requests[j].Latency = 2 * time.Second
				}
			}
		}
		c, _ := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{`latency < 5s for >= 99%`}}))
		v := c.Evaluate(tl)
		if v.Outcome != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, v.Outcome, v.Reason, tt.want)
		}
		for _, r := range tt.reason {
			if !strings.Contains(v.Reason, r) {
				t.Errorf("%s: reason %q lacks %q", tt.name, v.Reason, r)
			}
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 18884: "18,884", 2e9: "2,000,000,000", -1234: "-1,234"} {
		if got := count(n); got != want {
			t.Errorf("count(%v) = %q, want %q", n, got, want)
		}
	}
}
