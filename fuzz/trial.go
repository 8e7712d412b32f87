package fuzz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/scenarios"
	"github.com/chaoskit/chaoskit/timeline"
)

// Outcome is what one run of a schedule showed.
type Outcome struct {
	// Verdicts are the scenario's contracts (its invariants) judged on the
	// run, in the scenario's order; Failed names those that failed.
	Verdicts []contract.Verdict
	Failed   []string
	// Mix lists the classes (and fallback sources) that served at least
	// MixShare of the requests sent while a fault was on:
	// "fallback:cache", "primary", "rejected".
	Mix []string
	// Hits counts marker hits per fault, keyed by phase and fault key
	// ("faults-1/store/productQuery=timeout"); a fault that never fired
	// has 0.
	Hits map[string]int64
	// Dir is the run directory; File the scenario file that was run.
	Dir  string
	File string
	// Elapsed is how long the run took.
	Elapsed time.Duration
}

// MixShare is the least share of the faulted requests a class must serve
// to count in an outcome's mix.
const MixShare = 0.05

// Violated reports whether an invariant failed.
func (o *Outcome) Violated() bool { return len(o.Failed) > 0 }

// Fails reports whether the named invariant failed.
func (o *Outcome) Fails(name string) bool { return slices.Contains(o.Failed, name) }

// Signature is the effect of a run as exploration compares them: the
// invariants that failed and the classification mix.
func (o *Outcome) Signature() string {
	return "failed[" + strings.Join(o.Failed, "; ") + "] mix[" + strings.Join(o.Mix, " ") + "]"
}

// Unfired returns the faults of s whose marker never fired in the run.
func (o *Outcome) Unfired(s Schedule) []string {
	var out []string
	for _, p := range s.Phases {
		for _, f := range p.Faults {
			if h, ok := o.Hits[p.Name+"/"+f.Key()]; ok && h == 0 {
				out = append(out, f.Key())
			}
		}
	}
	return out
}

// Trier runs schedules. RunTrier is the one chaoskit uses: a real run of
// the rendered scenario.
type Trier interface {
	// Try runs schedule s under the label (which names its run directory).
	Try(ctx context.Context, label string, s Schedule) (*Outcome, error)
}

// RunTrier runs each schedule for real: it renders it against Base,
// writes the scenario file, loads it as `chaoskit run` does and carries it
// out with runner.Run (the target started afresh, real load, real
// failpoints), then judges the invariants on the recorded timeline.
type RunTrier struct {
	Base *scenarios.Scenario
	// Load are the options scenarios load with (the failpoint catalog).
	Load scenarios.Options
	// Run are the runner's options; Dir is set per run.
	Run runner.Options
	// Dir holds the scenario files and run directories of the trials.
	Dir string
}

// Try implements Trier. Errors are the runner's: an infrastructure error or
// an interruption; a schedule that does not load is an error too.
func (t *RunTrier) Try(ctx context.Context, label string, s Schedule) (*Outcome, error) {
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return nil, &runner.InfraError{Msg: "cannot create the trial directory", Err: err}
	}
	file := filepath.Join(t.Dir, label+".yaml")
	sc, text, err := Load(t.Base, s, t.Base.Name+"-"+label, file, "", t.Load)
	if err != nil {
		return nil, fmt.Errorf("schedule %s does not make a valid scenario: %w", s, err)
	}
	if err := os.WriteFile(file, text, 0o644); err != nil {
		return nil, &runner.InfraError{Msg: "cannot write the trial scenario", Err: err}
	}
	return RunScenario(ctx, sc, t.Run, filepath.Join(t.Dir, label))
}

// RunScenario runs a loaded scenario into dir and judges its contracts.
func RunScenario(ctx context.Context, sc *scenarios.Scenario, opts runner.Options, dir string) (*Outcome, error) {
	start := time.Now()
	opts.Dir = dir
	res, err := runner.Run(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	o := Judge(sc, res.Timeline)
	o.Dir, o.File, o.Elapsed = dir, sc.File, time.Since(start)
	return o, nil
}

// Judge evaluates the scenario's contracts on a timeline and measures the
// run's classification mix and fault hits.
//
// A fault whose marker never fired had no effect on the run: a random
// schedule often switches on a fault on a path no request took (a cache
// fault while the database is healthy). Unlike chaoskit run, which calls a
// contract with such a fault in its window inconclusive (the service may be
// a plain build, which the runner refuses before any fault is switched
// on), Judge judges the invariant on what the requests showed; coverage
// counts the fault as scheduled but not fired.
func Judge(sc *scenarios.Scenario, tl *timeline.Timeline) *Outcome {
	o := &Outcome{Hits: map[string]int64{}}
	fired := withoutUnfired(tl)
	for _, c := range sc.Contracts {
		cc, err := contract.Compile(c.Spec())
		var v contract.Verdict
		if err != nil {
			v = contract.Verdict{Name: c.Name, Phase: c.Phase, Outcome: contract.Inconclusive, Reason: err.Error()}
		} else {
			v = cc.Evaluate(fired)
		}
		o.Verdicts = append(o.Verdicts, v)
		if v.Outcome == contract.Fail {
			o.Failed = append(o.Failed, c.Name)
		}
	}
	o.Mix = mix(sc, tl)
	keys := map[string]string{} // phase/path -> phase/key
	for _, p := range sc.Phases {
		for _, f := range p.Faults {
			k := p.Name + "/" + f.Point + "=" + f.Action
			keys[p.Name+"/"+f.Path] = k
			o.Hits[k] += 0
		}
	}
	for _, e := range tl.Events {
		if e.Kind == timeline.FaultHits && e.Hits != nil {
			if k, ok := keys[e.Phase+"/"+e.Point]; ok {
				o.Hits[k] += *e.Hits
			}
		}
	}
	return o
}

// withoutUnfired returns tl without the hit counts of faults that never
// fired.
func withoutUnfired(tl *timeline.Timeline) *timeline.Timeline {
	out := *tl
	out.Events = nil
	for _, e := range tl.Events {
		if e.Kind == timeline.FaultHits && e.Hits != nil && *e.Hits == 0 {
			continue
		}
		out.Events = append(out.Events, e)
	}
	return &out
}

// mix returns the classes serving at least MixShare of the requests sent
// while a fault was on.
func mix(sc *scenarios.Scenario, tl *timeline.Timeline) []string {
	spans := contract.FaultSpans(tl)
	cls := sc.Classification()
	counts := map[string]int{}
	n := 0
	for i := range tl.Requests {
		r := &tl.Requests[i]
		on := false
		for _, s := range spans {
			if !r.Time.Before(s.On) && (s.Off.IsZero() || r.Time.Before(s.Off)) {
				on = true
				break
			}
		}
		if !on {
			continue
		}
		n++
		c, src := cls.Classify(r)
		name := string(c)
		if c == contract.Fallback && src != "" {
			name += ":" + src
		}
		counts[name]++
	}
	var out []string
	for name, k := range counts {
		if float64(k) >= MixShare*float64(n) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// IsInfra reports whether err stops a search: the harness or the target
// failed, or the run was interrupted.
func IsInfra(err error) bool {
	var ie *runner.InfraError
	return errors.As(err, &ie) || errors.Is(err, runner.ErrInterrupted)
}
