package contract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// minDeliveredShare is the least share of its planned requests a phase
// must have sent, in total and at every moment, for the contracts judging
// it to mean anything. Below it the load generator fell behind, for
// whatever reason: a starved machine, a rate no machine sends, every
// worker waiting on a slow service, a paused chaoskit that caught up in a
// burst. The run did not test what the scenario says, and the verdict is
// inconclusive, with the figure, rather than a pass or a fail the service
// did not earn.
const minDeliveredShare = 0.8

// shortEvent returns the PhaseEnd event of the first phase of the window
// (every phase, for a whole-run window) that did not get its planned load,
// and whether it fell short in total (else: behind its plan at one
// moment).
func (w *window) shortEvent() (e timeline.Event, total, ok bool) {
	for _, e := range w.tl.Events {
		if e.Kind != timeline.PhaseEnd || (w.spec.Phase != "" && e.Phase != w.spec.Phase) {
			continue
		}
		planned, ok1 := timeline.Number(e.Data[timeline.PlannedRequests])
		sent, ok2 := timeline.Number(e.Data[timeline.SentRequests])
		if !ok1 || !ok2 || planned <= 0 {
			continue
		}
		slack := planned - minDeliveredShare*planned
		if planned-sent > slack {
			return e, true, true
		}
		// A generator that stalled and then caught up sent its total, but
		// not at the rate planned: the lag at its worst moment tells,
		// measured against the plan by that moment (a stall of 7 s, 10 s
		// into a 40 s phase, is 41 % of what was due then).
		by, ok1 := timeline.Number(e.Data[timeline.PlannedBy])
		sentBy, ok2 := timeline.Number(e.Data[timeline.SentBy])
		at, ok3 := timeline.Number(e.Data[timeline.BehindAt])
		judged := at >= float64(min(timeline.StallFrom, w.phaseLength(e.Phase))) && by >= timeline.StallMinPlanned
		if ok1 && ok2 && ok3 && judged && by-sentBy > by-minDeliveredShare*by {
			return e, false, true
		}
	}
	return timeline.Event{}, false, false
}

// phaseLength is how long phase was planned to last (as long as it ran,
// for a record without the plan).
func (w *window) phaseLength(phase string) time.Duration {
	p, ok := w.tl.Phase(phase)
	if !ok {
		return 0
	}
	if p.Planned > 0 {
		return p.Planned
	}
	return p.End.Sub(p.Start)
}

// shortPhase names the phase shortfall would speak of.
func (w *window) shortPhase() (string, bool) {
	e, _, ok := w.shortEvent()
	return e.Phase, ok
}

// shortfall explains why the window's phase (every phase, for a whole-run
// window) did not get its planned load, or returns "". flight measured
// that phase's requests in flight.
func (w *window) shortfall(flight *inFlight) string {
	e, total, ok := w.shortEvent()
	if !ok {
		return ""
	}
	if total {
		planned, _ := timeline.Number(e.Data[timeline.PlannedRequests])
		sent, _ := timeline.Number(e.Data[timeline.SentRequests])
		return fmt.Sprintf("the load generator sent %s of the %s requests planned for phase %q (%s): the run did not drive the load the scenario asks for; %s",
			count(sent), count(planned), e.Phase, percent(sent, planned), loadHint(e, flight))
	}
	by, _ := timeline.Number(e.Data[timeline.PlannedBy])
	sentBy, _ := timeline.Number(e.Data[timeline.SentBy])
	at, _ := timeline.Number(e.Data[timeline.BehindAt])
	return fmt.Sprintf("the load generator fell behind its plan: %v into phase %q it had sent %s of the %s requests planned by then (%s), and the rest came late, in a burst: the run did not drive the load the scenario asks for; %s",
		time.Duration(at).Round(time.Millisecond), e.Phase, count(sentBy), count(by), percent(sentBy, by), loadHint(e, flight))
}

// loadHint says what to do about a phase whose load fell short.
func loadHint(e timeline.Event, flight *inFlight) string {
	if workers, ok := timeline.Number(e.Data[timeline.MaxWorkers]); ok && workers > 0 && flight != nil && float64(flight.peak()) >= 0.9*workers {
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

// flightSlots is how many instants of a phase inFlight counts at.
const flightSlots = 10_000

// inFlight counts a phase's requests in flight, from their send times and
// latencies, at flightSlots evenly spaced instants of the phase: constant
// memory, one pass. Its peak is the most in flight at one of those
// instants, which misses only peaks shorter than a slot: the workers all
// waiting on a slow service, which is what it is asked about, last longer.
type inFlight struct {
	phase string
	start time.Time
	width time.Duration
	diff  []int
}

func newInFlight(tl *timeline.Timeline, phase string) *inFlight {
	f := &inFlight{phase: phase, diff: make([]int, flightSlots+2)}
	if p, ok := tl.Phase(phase); ok {
		f.start = p.Start
		f.width = max(p.End.Sub(p.Start)/flightSlots, 1)
	}
	return f
}

// slot is the first instant at or after t.
func (f *inFlight) slot(t time.Time) int {
	d := t.Sub(f.start)
	if d <= 0 {
		return 0
	}
	return int(min((d+f.width-1)/f.width, flightSlots+1))
}

func (f *inFlight) add(r *timeline.Request) {
	if r.Phase != f.phase || f.width == 0 {
		return
	}
	if s, e := f.slot(r.Time), f.slot(r.End()); s < e {
		f.diff[s]++
		f.diff[e]--
	}
}

func (f *inFlight) peak() int {
	cur, peak := 0, 0
	for _, d := range f.diff {
		cur += d
		peak = max(peak, cur)
	}
	return peak
}
