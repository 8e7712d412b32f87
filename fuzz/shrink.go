package fuzz

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

// Shrinker reduces a violating schedule to a minimal one that still
// violates the same invariant, re-running every candidate: it drops
// phases and faults, merges adjacent phases, makes faults cover their
// whole phase, lowers probabilities and latencies, shortens phases and
// lowers the rate, keeping each change that still fails the invariant
// without failing any invariant the original did not.
//
// Shrinking stays inside the fault space, so that the reproducer is a
// schedule the fuzzer could have drawn and fails for the reason the
// original did: probabilities, latencies and fault phases go no lower than
// the space's ranges allow, and the phases the invariants name (warmup,
// recovery) keep their length and never gain a fault, since the
// invariants' windows were written for them.
type Shrinker struct {
	Trier Trier
	// Invariant must keep failing; Allowed are the invariants a candidate
	// may fail (those the original failed).
	Invariant string
	Allowed   []string
	// Keep names the phases the invariants refer to: never dropped or
	// renamed.
	Keep map[string]bool
	// Valid, when set, rejects a candidate without running it (it does
	// not make a valid scenario).
	Valid func(Schedule) error
	// MinScale is the lowest rate multiplier to try; 0 disables lowering
	// the rate.
	MinScale float64
	// Space is the fault space the schedules come from.
	Space *plan.FaultSpace
	Config
}

// Shrunk is the record of shrinking.
type Shrunk struct {
	Runs    int           `json:"runs"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Steps   []ShrinkStep  `json:"steps"`
	// Stopped says why shrinking ended: "minimal", "budget" or "runs".
	Stopped string `json:"stopped"`
}

// ShrinkStep is one candidate tried.
type ShrinkStep struct {
	Step     string   `json:"step"`
	Accepted bool     `json:"accepted"`
	Failed   []string `json:"failed,omitempty"`
}

// candidate is a change to a schedule.
type candidate struct {
	step string
	s    Schedule
}

// Shrink returns the smallest violating schedule it found, starting from
// s, and the record of the steps tried. Errors are the trier's.
func (sh *Shrinker) Shrink(ctx context.Context, s Schedule) (Schedule, *Shrunk, error) {
	st := &shrinking{sh: sh, clk: sh.clock(), rec: &Shrunk{Stopped: "minimal"}, tried: map[string]bool{s.String(): true},
		cur: s, expected: overhead}
	st.start = st.clk.Now()
	var err error
	for changed := true; changed && err == nil && st.rec.Stopped == "minimal"; {
		changed = false
		for _, gen := range sh.generators() {
			// Each accepted change makes new candidates of the same kind
			// possible: drop one phase, then the next.
			for {
				var accepted bool
				if accepted, err = st.first(ctx, gen(st.cur)); !accepted || err != nil {
					break
				}
				changed = true
			}
			if err != nil || st.rec.Stopped != "minimal" {
				break
			}
		}
	}
	st.rec.Elapsed = st.clk.Now().Sub(st.start)
	return st.cur, st.rec, err
}

// generators are the kinds of change shrinking tries, in order: the ones
// that remove the most first.
func (sh *Shrinker) generators() []func(Schedule) []candidate {
	return []func(Schedule) []candidate{sh.dropPhases, sh.dropFaults, sh.mergePhases, sh.wholePhase,
		sh.lowerProbability, sh.lowerLatency, sh.shortenPhases, sh.lowerRate}
}

// Candidates returns the schedules one shrinking step from s, each with
// the name of its step, in the order Shrink tries them.
func (sh *Shrinker) Candidates(s Schedule) (steps []string, cands []Schedule) {
	for _, gen := range sh.generators() {
		for _, c := range gen(s) {
			steps, cands = append(steps, c.step), append(cands, c.s)
		}
	}
	return steps, cands
}

// shrinking is the state of one Shrink.
type shrinking struct {
	sh       *Shrinker
	clk      Clock
	start    time.Time
	rec      *Shrunk
	tried    map[string]bool
	cur      Schedule
	expected time.Duration // a run's time beyond its phases
}

// first runs the candidates in order until one keeps the violation, and
// makes it the current schedule.
func (st *shrinking) first(ctx context.Context, cands []candidate) (bool, error) {
	sh := st.sh
	for _, c := range cands {
		key := c.s.String()
		if st.tried[key] || c.s.Faults() == 0 {
			continue
		}
		st.tried[key] = true
		if c.s.Validate(sh.Space) != nil || (sh.Valid != nil && sh.Valid(c.s) != nil) {
			continue
		}
		switch {
		case sh.ShrinkRuns > 0 && st.rec.Runs >= sh.ShrinkRuns:
			st.rec.Stopped = "runs"
		case sh.ShrinkBudget > 0 && st.clk.Now().Sub(st.start)+c.s.Duration()+st.expected > sh.ShrinkBudget:
			st.rec.Stopped = "budget"
		}
		if st.rec.Stopped != "minimal" {
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		st.rec.Runs++
		label := fmt.Sprintf("shrink-%03d", st.rec.Runs)
		sh.progress(Event{Kind: ShrinkTry, Trial: st.rec.Runs, Label: label, Schedule: c.s, Step: c.step, Elapsed: st.clk.Now().Sub(st.start)})
		t0 := st.clk.Now()
		o, err := sh.Trier.Try(ctx, label, c.s)
		if err != nil {
			return false, err
		}
		st.expected = max(st.expected, st.clk.Now().Sub(t0)-c.s.Duration())
		ok := o.Fails(sh.Invariant)
		for _, f := range o.Failed {
			ok = ok && slices.Contains(sh.Allowed, f)
		}
		st.rec.Steps = append(st.rec.Steps, ShrinkStep{Step: c.step, Accepted: ok, Failed: o.Failed})
		sh.progress(Event{Kind: ShrinkDone, Trial: st.rec.Runs, Label: label, Schedule: c.s, Step: c.step, Outcome: o, Accepted: ok, Elapsed: st.clk.Now().Sub(st.start)})
		if ok {
			st.cur = c.s
			return true, nil
		}
	}
	return false, nil
}

func (sh *Shrinker) dropPhases(s Schedule) []candidate {
	var out []candidate
	for i, p := range s.Phases {
		if sh.Keep[p.Name] || len(s.Phases) == 1 {
			continue
		}
		c := s.Clone()
		c.Phases = slices.Delete(c.Phases, i, i+1)
		out = append(out, candidate{"drop phase " + p.Name, c})
	}
	return out
}

func (sh *Shrinker) dropFaults(s Schedule) []candidate {
	var out []candidate
	for i, p := range s.Phases {
		for j, f := range p.Faults {
			c := s.Clone()
			c.Phases[i].Faults = slices.Delete(c.Phases[i].Faults, j, j+1)
			out = append(out, candidate{fmt.Sprintf("drop %s from %s", f.Key(), p.Name), c})
		}
	}
	return out
}

// mergePhases joins neighbours into one phase holding both's faults at
// their former times, named after the one the invariants refer to, else
// after the first with faults.
func (sh *Shrinker) mergePhases(s Schedule) []candidate {
	var out []candidate
	for i := 0; i+1 < len(s.Phases); i++ {
		a, b := s.Phases[i], s.Phases[i+1]
		switch {
		case sh.Keep[a.Name] && sh.Keep[b.Name],
			sh.Keep[a.Name] && len(b.Faults) > 0,
			sh.Keep[b.Name] && len(a.Faults) > 0:
			continue
		}
		m := Phase{Name: a.Name, Duration: a.Duration + b.Duration}
		if sh.Keep[b.Name] || len(a.Faults) == 0 && !sh.Keep[a.Name] {
			m.Name = b.Name
		}
		for _, f := range a.Faults {
			on, off := f.window(a.Duration)
			f.For = off - on
			m.Faults = append(m.Faults, f)
		}
		for _, f := range b.Faults {
			on, off := f.window(b.Duration)
			f.After, f.For = a.Duration+on, off-on
			if a.Duration+off == m.Duration {
				f.For = 0
			}
			m.Faults = append(m.Faults, f)
		}
		c := s.Clone()
		c.Phases = slices.Replace(c.Phases, i, i+2, m)
		out = append(out, candidate{fmt.Sprintf("merge %s and %s", a.Name, b.Name), c})
	}
	return out
}

func (sh *Shrinker) wholePhase(s Schedule) []candidate {
	return eachFault(s, func(f *Fault) string {
		if f.After == 0 && f.For == 0 {
			return ""
		}
		f.After, f.For = 0, 0
		return "over the whole phase"
	})
}

// spaceFault returns the fault space's entry for a failpoint.
func (sh *Shrinker) spaceFault(path string) *plan.FuzzFault {
	for i := range sh.Space.Faults {
		if sh.Space.Faults[i].Path == path {
			return &sh.Space.Faults[i]
		}
	}
	return &plan.FuzzFault{Latency: plan.DurationRange{Min: latencyStep}, Probability: plan.FloatRange{Min: probStep}}
}

func (sh *Shrinker) lowerProbability(s Schedule) []candidate {
	return eachFault(s, func(f *Fault) string {
		if !f.hasProbability() {
			return ""
		}
		p := f.Probability
		if p == 0 {
			p = 1
		}
		floor := sh.spaceFault(f.Path).Probability.Min
		lower := max(roundProb(float64(int(p/2/probStep))*probStep), floor)
		if lower < probStep || lower >= p {
			return ""
		}
		f.Probability = lower
		return fmt.Sprintf("probability %v", lower)
	})
}

func (sh *Shrinker) lowerLatency(s Schedule) []candidate {
	return eachFault(s, func(f *Fault) string {
		if f.Action != "latency" && f.Action != requestDelay {
			return ""
		}
		d, err := time.ParseDuration(f.Value)
		lower := max((d / 2).Truncate(latencyStep), sh.spaceFault(f.Path).Latency.Min)
		if err != nil || lower < latencyStep || lower >= d {
			return ""
		}
		f.Value = lower.String()
		return string(f.Action) + " " + f.Value
	})
}

// eachFault makes one candidate per fault that change accepts (by
// returning what it did).
func eachFault(s Schedule, change func(*Fault) string) []candidate {
	var out []candidate
	for i, p := range s.Phases {
		for j, f := range p.Faults {
			c := s.Clone()
			if what := change(&c.Phases[i].Faults[j]); what != "" {
				out = append(out, candidate{fmt.Sprintf("%s in %s: %s", f.Key(), p.Name, what), c})
			}
		}
	}
	return out
}

// shortenPhases halves a fault phase, and its faults' times with it.
func (sh *Shrinker) shortenPhases(s Schedule) []candidate {
	var out []candidate
	for i, p := range s.Phases {
		if sh.Keep[p.Name] {
			continue
		}
		d := max((p.Duration / 2).Truncate(phaseStep), sh.Space.Duration.Min)
		if d < 2*phaseStep || d >= p.Duration {
			continue
		}
		c := s.Clone()
		c.Phases[i].Duration = d
		for j := range c.Phases[i].Faults {
			f := &c.Phases[i].Faults[j]
			f.After, f.For = (f.After / 2).Truncate(phaseStep), (f.For / 2).Truncate(phaseStep)
			if f.For == 0 && p.Faults[j].For > 0 {
				f.For = phaseStep
			}
			if f.After+f.For >= d {
				f.For = 0
			}
		}
		out = append(out, candidate{fmt.Sprintf("shorten %s to %v", p.Name, d), c})
	}
	return out
}

func (sh *Shrinker) lowerRate(s Schedule) []candidate {
	lower := s.Scale() / 2
	if sh.MinScale <= 0 || lower < sh.MinScale {
		return nil
	}
	c := s.Clone()
	c.RateScale = lower
	return []candidate{{fmt.Sprintf("rate ×%v", lower), c}}
}
