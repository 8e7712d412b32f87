package contract

import (
	"fmt"
	"sort"

	"github.com/chaoskit/chaoskit/timeline"
)

// MinDeliveredShare is the least share of its planned requests a phase
// must have sent for the contracts judging it to mean anything. Below it
// the load generator fell behind (a starved machine, too few workers for
// the service's latency): the run did not test what the scenario says, and
// the verdict is inconclusive rather than a pass or a fail the service did
// not earn.
const MinDeliveredShare = 0.8

// shortfall explains why the window's phase (every phase, for a whole-run
// window) did not get its planned load, or returns "".
func (w *window) shortfall() string {
	for _, e := range w.tl.Events {
		if e.Kind != timeline.PhaseEnd || (w.spec.Phase != "" && e.Phase != w.spec.Phase) {
			continue
		}
		planned, ok1 := number(e.Data[timeline.PlannedRequests])
		sent, ok2 := number(e.Data[timeline.SentRequests])
		if !ok1 || !ok2 || planned <= 0 {
			continue
		}
		if sent < MinDeliveredShare*planned {
			// A generator with every worker waiting on the service was held
			// back by the service's latency, not starved: that is evidence
			// about the service, and the verdict stands.
			if workers, ok := number(e.Data[timeline.MaxWorkers]); ok && workers > 0 && float64(w.peakInFlight(e.Phase)) >= 0.9*workers {
				continue
			}
			return fmt.Sprintf("the load generator sent %.0f of the %.0f requests planned for phase %q (%.0f%%): the run did not drive the load the scenario asks for; the machine may be overloaded, or max_workers too low for the service's latency",
				sent, planned, e.Phase, 100*sent/planned)
		}
	}
	return ""
}

// peakInFlight is the most requests of phase that were in flight at once,
// from their send times and latencies.
func (w *window) peakInFlight(phase string) int {
	type edge struct {
		t     int64
		delta int
	}
	var edges []edge
	for _, r := range w.tl.Requests {
		if r.Phase == phase {
			edges = append(edges, edge{r.Time.UnixNano(), 1}, edge{r.End().UnixNano(), -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].delta < edges[j].delta // ends before starts at the same instant
	})
	cur, peak := 0, 0
	for _, e := range edges {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

// number reads a count from event data, as recorded (an integer) or read
// back from disk (a float64).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}
