package contract

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// MinDeliveredShare is the least share of its planned requests a phase
// must have sent, in total and at every moment, for the contracts judging
// it to mean anything. Below it the load generator fell behind, for
// whatever reason: a starved machine, a rate no machine sends, every
// worker waiting on a slow service, a paused chaoskit that caught up in a
// burst. The run did not test what the scenario says, and the verdict is
// inconclusive, with the figure, rather than a pass or a fail the service
// did not earn.
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
		slack := planned - MinDeliveredShare*planned
		if planned-sent > slack {
			return fmt.Sprintf("the load generator sent %s of the %s requests planned for phase %q (%s): the run did not drive the load the scenario asks for; %s",
				count(sent), count(planned), e.Phase, percent(sent, planned), w.loadHint(e))
		}
		// A generator that stalled and then caught up sent its total, but
		// not at the rate planned: the lag at its worst moment tells.
		by, ok1 := number(e.Data[timeline.PlannedBy])
		sentBy, ok2 := number(e.Data[timeline.SentBy])
		at, ok3 := number(e.Data[timeline.BehindAt])
		if ok1 && ok2 && ok3 && by-sentBy > slack {
			return fmt.Sprintf("the load generator fell behind its plan: %v into phase %q it had sent %s of the %s requests planned by then (%s), and the rest came late, in a burst: the run did not drive the load the scenario asks for; %s",
				time.Duration(at).Round(time.Millisecond), e.Phase, count(sentBy), count(by), percent(sentBy, by), w.loadHint(e))
		}
	}
	return ""
}

// loadHint says what to do about a phase whose load fell short.
func (w *window) loadHint(e timeline.Event) string {
	if workers, ok := number(e.Data[timeline.MaxWorkers]); ok && workers > 0 && float64(w.peakInFlight(e.Phase)) >= 0.9*workers {
		return fmt.Sprintf("all %s workers (max_workers) were waiting on the service: raise load.max_workers or lower the rate", count(workers))
	}
	return "the machine may be overloaded, the rate beyond what it can send, or chaoskit was paused: lower the rate (or --rate-scale) or run on a less busy machine"
}

// count renders n with thousands separators: 2,000,000,000.
func count(n float64) string {
	s := strconv.FormatFloat(math.Round(n), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// percent renders a/b as a percentage with two significant digits below
// 10%: 0.0017%, 57%.
func percent(a, b float64) string {
	p := 100 * a / b
	if p < 10 {
		return strconv.FormatFloat(p, 'g', 2, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
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
