package fuzz

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

// Clock tells the time. Searches read it to keep within their budget;
// tests give a fake one.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// EventKind names a step of a search.
type EventKind string

// The steps a search reports.
const (
	TrialStart EventKind = "trial_start"
	TrialDone  EventKind = "trial_done"
	ShrinkTry  EventKind = "shrink_try"
	ShrinkDone EventKind = "shrink_done"
	ComboStart EventKind = "combo_start"
	ComboDone  EventKind = "combo_done"
	ComboSkip  EventKind = "combo_skip"
)

// Event reports progress: a trial or shrink candidate about to run, or
// its outcome.
type Event struct {
	Kind EventKind
	// Trial numbers trials (1, 2, ...) and shrink candidates.
	Trial    int
	Label    string
	Schedule Schedule
	Outcome  *Outcome
	// Step describes a shrink candidate; Accepted says whether it kept
	// the violation.
	Step     string
	Accepted bool
	// Elapsed is the time since the search (or shrinking) started.
	Elapsed time.Duration
}

// Config controls a search.
type Config struct {
	// Seed chooses the schedules: the same seed gives the same schedules.
	Seed uint64
	// Budget bounds the search: no trial starts that is not expected to
	// end within it. Runs, when above 0, bounds the number of trials.
	Budget time.Duration
	Runs   int
	// ShrinkBudget and ShrinkRuns bound shrinking the same way.
	ShrinkBudget time.Duration
	ShrinkRuns   int
	// Clock defaults to the real one.
	Clock Clock
	// Progress, when set, is told about every trial and shrink step.
	Progress func(Event)
}

func (c *Config) clock() Clock {
	if c.Clock == nil {
		return realClock{}
	}
	return c.Clock
}

func (c *Config) progress(e Event) {
	if c.Progress != nil {
		c.Progress(e)
	}
}

// TrialRecord is one trial of a search.
type TrialRecord struct {
	Trial    int           `json:"trial"`
	Schedule string        `json:"schedule"`
	Failed   []string      `json:"failed,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// Violation is a schedule that broke an invariant, and its shrunk form.
type Violation struct {
	Trial int `json:"trial"`
	// FoundAfter is the time from the search's start to the end of the
	// violating trial.
	FoundAfter time.Duration `json:"found_after_ns"`
	// Invariant is the invariant shrinking keeps failing (the first that
	// failed); Failed all that failed in the trial.
	Invariant string    `json:"invariant"`
	Failed    []string  `json:"failed"`
	Original  Schedule  `json:"-"`
	Outcome   *Outcome  `json:"-"`
	Shrunk    Schedule  `json:"-"`
	Shrink    *Shrunk   `json:"shrink,omitempty"`
	Schedules [2]string `json:"schedules"`
}

// Result is what a search found.
type Result struct {
	Seed      uint64        `json:"seed"`
	Trials    []TrialRecord `json:"trials"`
	Violation *Violation    `json:"violation,omitempty"`
	Coverage  *Coverage     `json:"coverage"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// Stopped says why the search ended: "violation", "budget" or "runs".
	Stopped string `json:"stopped"`
}

// overhead is the time a run is expected to take beyond its phases
// (starting the target, reading writes back) before one was measured.
const overhead = time.Second

// Search runs trials drawn from sc's fault space until one breaks an
// invariant or the budget is spent. It does not shrink (see Shrinker).
// Errors are the trier's: the search stops at the first.
func Search(ctx context.Context, sc *plan.Scenario, tr Trier, cfg Config) (*Result, error) {
	clk := cfg.clock()
	start := clk.Now()
	res := &Result{Seed: cfg.Seed, Coverage: NewCoverage(sc), Stopped: "budget"}
	extra := overhead
	for trial := 1; ; trial++ {
		if cfg.Runs > 0 && trial > cfg.Runs {
			res.Stopped = "runs"
			break
		}
		s := Generate(sc.Fuzz, cfg.Seed, trial)
		if clk.Now().Sub(start)+s.Duration()+extra > cfg.Budget {
			break
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		label := fmt.Sprintf("trial-%03d", trial)
		cfg.progress(Event{Kind: TrialStart, Trial: trial, Label: label, Schedule: s, Elapsed: clk.Now().Sub(start)})
		t0 := clk.Now()
		o, err := tr.Try(ctx, label, s)
		if err != nil {
			res.Elapsed = clk.Now().Sub(start)
			return res, err
		}
		took := clk.Now().Sub(t0)
		extra = max(extra, took-s.Duration())
		res.Coverage.Add(s, o)
		res.Trials = append(res.Trials, TrialRecord{Trial: trial, Schedule: s.String(), Failed: o.Failed, Elapsed: took})
		cfg.progress(Event{Kind: TrialDone, Trial: trial, Label: label, Schedule: s, Outcome: o, Elapsed: clk.Now().Sub(start)})
		if o.Violated() {
			res.Violation = &Violation{Trial: trial, FoundAfter: clk.Now().Sub(start), Invariant: o.Failed[0], Failed: o.Failed,
				Original: s, Outcome: o, Shrunk: s, Schedules: [2]string{s.String(), s.String()}}
			res.Stopped = "violation"
			break
		}
	}
	res.Elapsed = clk.Now().Sub(start)
	return res, nil
}
