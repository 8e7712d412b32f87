// Package trials runs fault schedules for real: each rendered against its
// fuzz scenario, written as a scenario file, loaded as `chaoskit run` loads
// it and carried out by the runner (the target started afresh, real vegeta
// load, real failpoints), then judged by package fuzz. It is apart from
// package fuzz so that the schedule logic builds without the runner (and
// with go-fuzz, which vegeta's own gofuzz file keeps from building it).
package trials

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/timeline"
)

// Runner is the fuzz.Trier chaoskit fuzz and explore use.
type Runner struct {
	Base *plan.Scenario
	// Load are the options scenarios load with (the failpoint catalog).
	Load plan.Options
	// Run are the runner's options; Dir is set per run.
	Run runner.Options
	// Dir holds the scenario files and run directories of the trials.
	Dir string
}

// Try implements fuzz.Trier. Errors are the runner's (an infrastructure
// error or an interruption) or a schedule that does not load.
func (t *Runner) Try(ctx context.Context, label string, s fuzz.Schedule) (*fuzz.Outcome, error) {
	sc, err := Write(t.Base, s, label, t.Dir, t.Load)
	if err != nil {
		return nil, err
	}
	return Run(ctx, sc, t.Run, filepath.Join(t.Dir, label))
}

// Write renders schedule s of the fuzz scenario base as the scenario file
// dir/LABEL.yaml, named BASE-LABEL, and returns it loaded with opts.
func Write(base *plan.Scenario, s fuzz.Schedule, label, dir string, opts plan.Options) (*plan.Scenario, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &runner.InfraError{Msg: "cannot create the trial directory", Err: err}
	}
	file := filepath.Join(dir, label+".yaml")
	sc, text, err := fuzz.Load(base, s, base.Name+"-"+label, file, "", opts)
	if err != nil {
		return nil, fmt.Errorf("schedule %s does not make a valid scenario: %w", s, err)
	}
	// Through a temporary file renamed over it: a link planted under the
	// name is replaced, never written through.
	if err := outdir.WriteBytes(file, text); err != nil {
		return nil, &runner.InfraError{Msg: "cannot write the trial scenario", Err: err}
	}
	return sc, nil
}

// Run runs a loaded scenario into dir and judges its contracts.
func Run(ctx context.Context, sc *plan.Scenario, opts runner.Options, dir string) (*fuzz.Outcome, error) {
	start := time.Now()
	opts.Dir = dir
	res, err := runner.Run(ctx, sc, opts)
	if err != nil {
		return nil, err
	}
	o, err := Judge(sc, res.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir, o.File, o.Elapsed = dir, sc.File, time.Since(start)
	return o, nil
}

// Judge judges the trial recorded in the run directory dir as fuzz and
// explore do: read as chaoskit report reads it, by the one judge
// (fuzz.Judge).
func Judge(sc *plan.Scenario, dir string) (*fuzz.Outcome, error) {
	src, err := timeline.OpenDir(dir)
	if err != nil {
		return nil, &runner.InfraError{Msg: "cannot read the trial's timeline", Err: err}
	}
	o, err := fuzz.Judge(sc, src)
	if err != nil {
		return nil, &runner.InfraError{Msg: "cannot read the trial's requests", Err: err}
	}
	return o, nil
}

// IsInfra reports whether err stops a search: the harness or the target
// failed, or the run was interrupted.
func IsInfra(err error) bool {
	var ie *runner.InfraError
	return errors.As(err, &ie) || errors.Is(err, runner.ErrInterrupted)
}
