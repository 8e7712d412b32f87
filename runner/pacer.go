package runner

import (
	"fmt"
	"math"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// StepPacer holds each step's rate for the step's duration; the last step
// holds until the attack ends. It is a vegeta.Pacer.
type StepPacer struct {
	Steps []PacerStep
}

// PacerStep is one rate of a StepPacer, in hits per second, held for For
// (ignored for the last step).
type PacerStep struct {
	PerSecond float64
	For       time.Duration
}

var _ vegeta.Pacer = StepPacer{}

// hits returns how many hits are due by elapsed: the integral of the rate.
func (p StepPacer) hits(elapsed time.Duration) float64 {
	total, start := 0.0, time.Duration(0)
	for i, s := range p.Steps {
		last := i == len(p.Steps)-1
		if last || elapsed < start+s.For {
			return total + s.PerSecond*(elapsed-start).Seconds()
		}
		total += s.PerSecond * s.For.Seconds()
		start += s.For
	}
	return total
}

// Pace implements vegeta.Pacer: the wait until hit number hits+1 is due.
func (p StepPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if len(p.Steps) == 0 {
		return 0, true
	}
	if float64(hits) < p.hits(elapsed) {
		return 0, false // running behind
	}
	// Walk the steps to find when the next hit is due.
	want := float64(hits + 1)
	total, start := 0.0, time.Duration(0)
	for i, s := range p.Steps {
		last := i == len(p.Steps)-1
		end := total + s.PerSecond*s.For.Seconds()
		if last || want <= end {
			if s.PerSecond <= 0 {
				return 0, true
			}
			due := start + time.Duration((want-total)/s.PerSecond*float64(time.Second))
			return max(due-elapsed, 0), false
		}
		total, start = end, start+s.For
	}
	return 0, true
}

// Rate implements vegeta.Pacer: the rate of the step elapsed falls in.
func (p StepPacer) Rate(elapsed time.Duration) float64 {
	start := time.Duration(0)
	for i, s := range p.Steps {
		if i == len(p.Steps)-1 || elapsed < start+s.For {
			return s.PerSecond
		}
		start += s.For
	}
	return 0
}

func (p StepPacer) String() string {
	var parts []string
	for _, s := range p.Steps {
		parts = append(parts, fmt.Sprintf("%g/s for %v", s.PerSecond, s.For))
	}
	return "Steps{" + strings.Join(parts, ", ") + "}"
}

// pacerFor returns the pacer of a phase's load lasting d.
func pacerFor(l plan.Load, d time.Duration) vegeta.Pacer {
	rate := func(r plan.Rate) vegeta.Rate { return vegeta.Rate{Freq: r.Freq, Per: r.Per} }
	switch {
	case l.Pacer == nil && l.Rate.Freq > 0 && l.Rate.Per > 0 && l.Rate.Per.Nanoseconds() < int64(l.Rate.Freq):
		// vegeta's constant pacer spaces hits by a whole number of
		// nanoseconds: above 10⁹/s that is zero, and it divides by it. The
		// step pacer computes in floating point; the load generator falls
		// behind such a rate anyway, and the verdict says so.
		return StepPacer{Steps: []PacerStep{{PerSecond: l.Rate.PerSecond()}}}
	case l.Pacer == nil:
		return rate(l.Rate)
	case l.Pacer.Linear != nil:
		lp := l.Pacer.Linear
		slope := (lp.To.PerSecond() - lp.From.PerSecond()) / d.Seconds()
		return vegeta.LinearPacer{StartAt: rate(lp.From), Slope: slope}
	case l.Pacer.Sine != nil:
		s := l.Pacer.Sine
		return vegeta.SinePacer{Period: s.Period.D(), Mean: rate(s.Mean), Amp: rate(s.Amplitude), StartAt: s.SineStart() * math.Pi}
	default:
		sp := StepPacer{}
		for _, s := range l.Pacer.Steps {
			sp.Steps = append(sp.Steps, PacerStep{PerSecond: s.Rate.PerSecond(), For: s.For.D()})
		}
		return sp
	}
}

// describeLoad says in a few words what rate a load runs at.
func describeLoad(l plan.Load) string {
	switch {
	case l.Pacer == nil:
		return l.Rate.String()
	case l.Pacer.Linear != nil:
		return fmt.Sprintf("linear %v→%v", l.Pacer.Linear.From, l.Pacer.Linear.To)
	case l.Pacer.Sine != nil:
		s := l.Pacer.Sine
		return fmt.Sprintf("sine %v±%v/%v", s.Mean, s.Amplitude, s.Period.D())
	default:
		var parts []string
		for _, s := range l.Pacer.Steps {
			parts = append(parts, s.Rate.String())
		}
		return "steps " + strings.Join(parts, "→")
	}
}

// plannedHits is how many requests p plans over d: the hits a load
// generator that never falls behind would have sent by then. It works for
// any vegeta.Pacer, which says "running behind" (no wait) exactly while
// fewer hits than planned have been sent: the smallest h for which p asks
// to wait (or stop) at d is the plan. A plan beyond maxPlanned (a rate no
// machine sends) counts as maxPlanned.
func plannedHits(p vegeta.Pacer, d time.Duration) uint64 {
	behind := func(h uint64) bool {
		wait, stop := p.Pace(d, h)
		return !stop && wait <= 0
	}
	lo, hi := uint64(0), uint64(1)
	for behind(hi) {
		if hi >= maxPlanned {
			return maxPlanned
		}
		lo, hi = hi, hi*2
	}
	for lo < hi { // the smallest h in [lo, hi] not behind
		mid := lo + (hi-lo)/2
		if behind(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// maxPlanned bounds plannedHits: 2⁵³, the largest count a float64 (the
// JSON of the timeline) holds exactly.
const maxPlanned = 1 << 53

// deliverySlots is how many slices of a phase delivery counts sends in:
// the load generator's lag behind its plan is measured at the end of each.
const deliverySlots = 1000

// delivery counts a phase's requests by when they were sent, in
// deliverySlots equal slices of the phase, in constant memory.
type delivery struct {
	start time.Time
	d     time.Duration
	sent  [deliverySlots]uint64
}

func newDelivery(start time.Time, d time.Duration) *delivery {
	return &delivery{start: start, d: d}
}

// add counts one request sent at t.
func (dl *delivery) add(t time.Time) {
	if dl.d <= 0 {
		return
	}
	i := int(int64(t.Sub(dl.start)) * deliverySlots / int64(dl.d))
	dl.sent[min(max(i, 0), deliverySlots-1)]++
}

// behind returns the moment, at the end of one of the slices, when the
// requests sent were the smallest share of those p planned by then: its
// offset, and the planned and sent counts then. A stall is measured
// against the plan by that moment, not against the whole phase: 7 s of a
// paused load generator are a 41 % shortfall 10 s into a 40 s phase, not
// an 18 % one. The moments judged start at timeline.StallFrom (or the end of a
// shorter phase) and at timeline.StallMinPlanned planned requests (see
// timeline.StallFrom); the last slice
// ends the phase, so a generator that fell behind and stayed behind shows
// there.
func (dl *delivery) behind(p vegeta.Pacer) (at time.Duration, planned, sent uint64) {
	var total uint64
	worst := math.Inf(1)
	from := min(timeline.StallFrom, dl.d)
	for i := range deliverySlots {
		total += dl.sent[i]
		end := time.Duration(int64(dl.d) * int64(i+1) / deliverySlots)
		last := i == deliverySlots-1
		if end < from && !last {
			continue
		}
		due := plannedHits(p, end)
		if due < timeline.StallMinPlanned && !last {
			continue
		}
		share := 1.0
		if due > 0 {
			share = float64(min(total, due)) / float64(due)
		}
		if share < worst {
			worst, at, planned, sent = share, end, due, total
		}
	}
	return at, planned, sent
}
