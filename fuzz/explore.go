package fuzz

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
)

// Combo is a set of faults switched on together, for the whole of one
// fault phase.
type Combo []Fault

// Label names the combination: "store/productQuery=timeout +
// cache/cacheGet=error"; "no fault" for none.
func (c Combo) Label() string {
	if len(c) == 0 {
		return "no fault"
	}
	keys := make([]string, len(c))
	for i, f := range c {
		keys[i] = f.Key()
	}
	return strings.Join(keys, " + ")
}

// Row is one combination of an exploration and what it showed.
type Row struct {
	Combo Combo `json:"-"`
	Label string
	// Outcome is nil when the combination was not run: covered by another
	// (CoveredBy names it) or left over when the budget ran out.
	Outcome   *Outcome `json:"-"`
	CoveredBy string   `json:"covered_by,omitempty"`
	Failed    []string `json:"failed,omitempty"`
	Mix       []string `json:"mix,omitempty"`
	// Unfired lists the faults whose marker never fired.
	Unfired []string `json:"unfired,omitempty"`
	Run     bool     `json:"run"`
}

// Exploration is the result of Explore: every single fault, then pairs,
// with the verdict of every invariant.
type Exploration struct {
	Invariants []string `json:"invariants"`
	Baseline   *Row     `json:"baseline"`
	Singles    []*Row   `json:"singles"`
	Pairs      []*Row   `json:"pairs"`
	// Runs is how many combinations ran (the baseline included); Saved how
	// many pairs were skipped because a pair of the same effects had run;
	// Unexplored how many were left when the budget ran out.
	Runs       int           `json:"runs"`
	Saved      int           `json:"saved"`
	Unexplored int           `json:"unexplored"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// Violated reports whether any combination failed an invariant.
func (e *Exploration) Violated() bool {
	for _, r := range e.rows() {
		if r.Outcome != nil && r.Outcome.Violated() {
			return true
		}
	}
	return false
}

func (e *Exploration) rows() []*Row {
	out := []*Row{}
	if e.Baseline != nil {
		out = append(out, e.Baseline)
	}
	out = append(out, e.Singles...)
	return append(out, e.Pairs...)
}

// Singles returns one fault per point × action of the fault space, each
// in its strongest form: the longest latency, the highest probability.
func Singles(fz *plan.FaultSpace) []Combo {
	var out []Combo
	for i := range fz.Faults {
		ff := &fz.Faults[i]
		for _, a := range ff.Actions {
			f := Fault{Point: ff.Name(), Path: ff.Path, Proxy: ff.Proxy, Process: ff.Process, Match: ff.Match, Action: inject.Action(a), Value: strongest(ff, inject.Action(a))}
			if ff.Probability.Max < 1 && f.hasProbability() {
				f.Probability = ff.Probability.Max
			}
			out = append(out, Combo{f})
		}
	}
	return out
}

// ComboSchedule is the schedule that runs a combination: the warmup, one
// fault phase as long as the fault space allows with every fault of the
// combination on throughout, and the recovery.
func ComboSchedule(fz *plan.FaultSpace, c Combo) Schedule {
	return Schedule{Phases: []Phase{
		{Name: plan.FuzzWarmup, Duration: fz.Warmup.D()},
		{Name: "faults-1", Duration: fz.Duration.Max, Faults: append([]Fault(nil), c...)},
		{Name: plan.FuzzRecovery, Duration: fz.Recovery.D()},
	}}
}

// Explore runs, in the spirit of Filibuster, a fault-free baseline, every
// single fault of sc's fault space once, then every pair of faults on
// different points, within cfg's budget. A pair is skipped when a pair
// whose faults had, alone, the same effects (the same failed invariants
// and the same classification mix) already ran: its effect is taken as
// covered. A fault whose marker never fired alone has no known effect, so
// it stands for itself only: its pairs are skipped only as a pair with
// the same fault and an equivalent partner.
func Explore(ctx context.Context, sc *plan.Scenario, tr Trier, cfg Config) (*Exploration, error) {
	clk := cfg.clock()
	start := clk.Now()
	ex := &Exploration{}
	for _, c := range sc.Contracts {
		ex.Invariants = append(ex.Invariants, c.Name)
	}
	extra := overhead
	n := 0
	run := func(c Combo) (*Row, error) {
		row := &Row{Combo: c, Label: c.Label()}
		s := ComboSchedule(sc.Fuzz, c)
		if clk.Now().Sub(start)+s.Duration()+extra > cfg.Budget {
			ex.Unexplored++
			return row, nil
		}
		if err := ctx.Err(); err != nil {
			return row, err
		}
		n++
		label := fmt.Sprintf("combo-%03d", n)
		cfg.progress(Event{Kind: ComboStart, Trial: n, Label: label, Schedule: s, Step: row.Label, Elapsed: clk.Now().Sub(start)})
		t0 := clk.Now()
		o, err := tr.Try(ctx, label, s)
		if err != nil {
			return row, err
		}
		extra = max(extra, clk.Now().Sub(t0)-s.Duration())
		ex.Runs++
		row.Run, row.Outcome, row.Failed, row.Mix, row.Unfired = true, o, o.Failed, o.Mix, o.Unfired(s)
		cfg.progress(Event{Kind: ComboDone, Trial: n, Label: label, Schedule: s, Step: row.Label, Outcome: o, Elapsed: clk.Now().Sub(start)})
		return row, nil
	}
	finish := func(err error) (*Exploration, error) {
		ex.Elapsed = clk.Now().Sub(start)
		return ex, err
	}
	var err error
	if ex.Baseline, err = run(nil); err != nil {
		return finish(err)
	}
	singles := Singles(sc.Fuzz)
	effect := map[string]string{} // fault key -> effect class
	for _, c := range singles {
		row, err := run(c)
		ex.Singles = append(ex.Singles, row)
		if err != nil {
			return finish(err)
		}
		switch {
		case row.Outcome == nil:
		case len(row.Unfired) > 0:
			effect[c[0].Key()] = "unfired " + c[0].Key()
		default:
			effect[c[0].Key()] = row.Outcome.Signature()
		}
	}
	covered := map[string]string{} // pair of effects -> label of the pair run
	for i := range singles {
		for j := i + 1; j < len(singles); j++ {
			a, b := singles[i][0], singles[j][0]
			if a.Path == b.Path {
				continue // one term at a time per failpoint
			}
			c := Combo{a, b}
			ea, oka := effect[a.Key()]
			eb, okb := effect[b.Key()]
			pair := []string{ea, eb}
			sort.Strings(pair)
			key := strings.Join(pair, " & ")
			if by, done := covered[key]; oka && okb && done {
				ex.Pairs = append(ex.Pairs, &Row{Combo: c, Label: c.Label(), CoveredBy: by})
				ex.Saved++
				cfg.progress(Event{Kind: ComboSkip, Step: c.Label(), Label: by, Elapsed: clk.Now().Sub(start)})
				continue
			}
			row, err := run(c)
			ex.Pairs = append(ex.Pairs, row)
			if err != nil {
				return finish(err)
			}
			if row.Run && oka && okb {
				covered[key] = row.Label
			}
		}
	}
	return finish(nil)
}
