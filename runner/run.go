// Package runner carries out a scenario: it starts the target, drives load
// at it with vegeta phase by phase, switches each phase's faults on and off
// through the failpoint control endpoint, samples the target's state, and
// records everything on a timeline streamed to the run directory.
//
// Whatever happens (normal end, target crash, cancellation, a panic in
// chaoskit) every fault the run enabled is disabled again and the target
// process is stopped before Run returns. A run killed with SIGKILL leaves a
// fault record behind for Rollback, and its started target dies with it.
package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/scenarios"
	"github.com/chaoskit/chaoskit/timeline"
)

// Options control a run.
type Options struct {
	// Self is the chaoskit binary that serves demo targets; empty means the
	// running executable.
	Self string
	// Dir is the run directory; it is created and must not hold another
	// run's files unless they can be replaced.
	Dir string
	// Log receives one line per phase and notes about the run; nil
	// discards.
	Log io.Writer
	// Live redraws a progress line on Log while a phase runs (Log is a
	// terminal).
	Live bool
	// Tool is the version string recorded on the timeline.
	Tool string
	// StateDir indexes the faults of unfinished runs by control endpoint,
	// so the next run against the same endpoint rolls back what a killed
	// run left on. Empty disables the index.
	StateDir string
	// RateScale is recorded on the timeline (the scenario's rates are
	// already scaled when it is loaded).
	RateScale float64
	// Classify gives each request its class for the progress lines and
	// run.json. It is the classifier the contracts judge by (package
	// harness decides it); nil counts requests without classes.
	Classify func(*timeline.Request) timeline.Class
	// Headers names the response headers the timeline keeps besides the
	// demo's X-Chaoskit-* ones, Retry-After and Content-Type; AllHeaders
	// keeps every one (at most 32 per request, each cut at 1 KiB).
	Headers    []string
	AllHeaders bool
}

// Result is what a run recorded.
type Result struct {
	Timeline *timeline.Timeline
	Summary  *Summary
	Dir      string
}

// InfraError is a failure of the harness or the target rather than of a
// contract: the target did not start, the control endpoint is unreachable,
// faults did not fire. It maps to exit code 3.
type InfraError struct {
	Msg string
	Fix string
	Err error
}

func (e *InfraError) Error() string {
	s := e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

func (e *InfraError) Unwrap() error { return e.Err }

// ExitCode is exitcode.Infra.
func (e *InfraError) ExitCode() int { return exitcode.Infra }

func infra(msg, fix string, err error) *InfraError { return &InfraError{Msg: msg, Fix: fix, Err: err} }

// ErrInterrupted is returned (wrapped) when the context was cancelled: the
// run stopped early, after rolling back its faults. Its exit code is
// exitcode.Interrupted.
var ErrInterrupted error = &exitcode.Error{Code: exitcode.Interrupted, Err: errors.New("run interrupted")}

// Files of a run directory.
const (
	// FaultRecord lists every fault the run enabled and those that may
	// still be on, rewritten before each fault is enabled, so a run killed
	// with SIGKILL can still be rolled back (see Rollback).
	FaultRecord = "faults.json"
	// ResultsFile holds the raw vegeta results, readable by `vegeta report`.
	ResultsFile = "results.bin"
	// ScenarioCopy is the scenario file as the run loaded it.
	ScenarioCopy = scenarios.CopyFile
	// SummaryFile is the run's summary (see Summary).
	SummaryFile = "run.json"
)

type run struct {
	sc   *scenarios.Scenario
	opts Options
	dir  string
	tw   *timeline.Writer
	tl   *timeline.Timeline
	tlMu sync.Mutex
	tgt  *target
	// seq numbers timeline requests; reqSeq feeds {seq} templates.
	seq, reqSeq atomic.Uint64
	keep        func(string) bool
	resBuf      *bufio.Writer
	resEnc      vegeta.Encoder
	faults      *faults
	sampler     *sampler
	phase       atomic.Value // name of the running phase
	summary     Summary
	exitOnce    sync.Once
}

// Run carries out sc. The returned Result is non-nil whenever the run
// directory was created, even with an error, and holds what was recorded.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (res *Result, err error) {
	if opts.Self == "" {
		if opts.Self, err = os.Executable(); err != nil {
			return nil, infra("cannot find the chaoskit executable", "", err)
		}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if err := prepareDir(ctx, opts.Dir); err != nil {
		return nil, infra("cannot create the run directory", "", err)
	}
	r := &run{sc: sc, opts: opts, dir: opts.Dir, keep: headerFilter(opts), tl: &timeline.Timeline{}}
	r.faults = &faults{run: r, on: map[string]bool{}}
	r.phase.Store("")
	tf, err := os.Create(filepath.Join(r.dir, timeline.FileName))
	if err != nil {
		return nil, infra("cannot write the timeline", "", err)
	}
	defer tf.Close()
	rf, err := os.Create(filepath.Join(r.dir, ResultsFile))
	if err != nil {
		return nil, infra("cannot write the results file", "", err)
	}
	defer rf.Close()
	r.resBuf = bufio.NewWriterSize(rf, 64<<10)
	r.resEnc = vegeta.NewEncoder(r.resBuf)
	r.tw = timeline.NewWriter(tf)
	res = &Result{Timeline: r.tl, Summary: &r.summary, Dir: r.dir}
	if err := scenarios.SaveCopy(r.dir, sc); err != nil {
		return res, infra("cannot save the scenario in the run directory", "", err)
	}
	r.tl.Meta = timeline.Meta{Scenario: sc.Name, File: sc.File, Start: time.Now(), Tool: opts.Tool, Vars: sc.Values, RateScale: opts.RateScale}
	if len(r.tl.Meta.Vars) == 0 {
		r.tl.Meta.Vars = nil
	}
	if err := r.tw.Meta(r.tl.Meta); err != nil {
		return res, infra("cannot write the timeline", "", err)
	}
	r.summary.begin(sc, r.tl.Meta.Start)

	stopSampler := func() {}
	// Every way out goes through here: sampling stopped, faults off, target
	// stopped, the record closed. A panic unwinds through it too.
	defer func() {
		if p := recover(); p != nil {
			err = infra(fmt.Sprintf("chaoskit panicked: %v", p), "this is a bug in chaoskit; the run's faults were rolled back", fmt.Errorf("%s", debug.Stack()))
		}
		stopSampler()
		if rbErr := r.faults.rollback(); rbErr != nil && (err == nil || errors.Is(err, ErrInterrupted)) {
			err = rbErr
		}
		r.stopTarget()
		r.summary.end(time.Now(), err, r.tl)
		_ = writeJSON(filepath.Join(r.dir, SummaryFile), r.summary)
		msg := "completed"
		if err != nil {
			msg = err.Error()
		}
		r.event(timeline.Event{Kind: timeline.RunEnd, Message: msg})
		_ = r.resBuf.Flush()
		_ = r.tw.Flush()
		r.tl.Complete = true
		if a := r.summary.FaultAcks; a.Count > 0 {
			fmt.Fprintf(opts.Log, "  fault switches: %d, acknowledged %v (p99) %v (max) after they were due\n", a.Count, a.P99, a.Max)
		}
	}()

	tgt, err := r.startTarget(ctx)
	r.tgt = tgt
	if err != nil {
		return res, interrupted(ctx, err)
	}
	r.tl.Meta.Target, r.tl.Meta.BaseURL, r.tl.Meta.Control = tgt.desc, tgt.baseURL, tgt.controlAddr
	if err := r.tw.Meta(r.tl.Meta); err != nil {
		return res, infra("cannot write the timeline", "", err)
	}
	if rb, err := rollbackPending(ctx, opts.StateDir, tgt.controlAddr); err != nil {
		fmt.Fprintf(opts.Log, "  could not roll back the faults a killed run left at %s: %v\n", tgt.controlAddr, err)
	} else if len(rb.Disabled) > 0 {
		fmt.Fprintf(opts.Log, "  rolled back %d fault(s) a killed run (%s) left at %s\n", len(rb.Disabled), rb.Dir, tgt.controlAddr)
		for _, p := range rb.Disabled {
			r.event(timeline.Event{Kind: timeline.FaultOff, Point: p, Message: "rolled back: left on by the killed run in " + rb.Dir})
		}
	}
	if err := r.checkFaultsCanFire(ctx); err != nil {
		return res, err
	}
	stopSampler = r.startSampler()
	if err := r.phases(ctx); err != nil {
		return res, interrupted(ctx, err)
	}
	if err := r.readBack(ctx); err != nil {
		return res, interrupted(ctx, err)
	}
	return res, nil
}

func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(ctx))
	}
	return err
}

// prepareDir creates dir, replacing an earlier run's files in it. Faults
// that earlier run may have left on are rolled back first.
func prepareDir(ctx context.Context, dir string) error {
	if dir == "" {
		return errors.New("no run directory given")
	}
	if fr, err := readRecord(filepath.Join(dir, FaultRecord)); err == nil && len(fr.Points) > 0 {
		_, _ = rollbackRecord(ctx, fr)
	}
	if _, err := os.Stat(filepath.Join(dir, timeline.FileName)); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// checkFaultsCanFire refuses to run faults against a service whose markers
// are inert: a pass would be a lie.
func (r *run) checkFaultsCanFire(ctx context.Context) error {
	hasFaults := false
	for _, p := range r.sc.Phases {
		hasFaults = hasFaults || len(p.Faults) > 0
	}
	if !hasFaults {
		return nil
	}
	if r.tgt.control == nil {
		return infra("the scenario switches faults but its target has no failpoint control endpoint", "set target.failpoints to the address given in GO_FAILPOINTS_HTTP", nil)
	}
	rep, ok, err := r.tgt.hits(ctx)
	if err == nil && ok && rep.FaultInjection != nil {
		// Recorded so that a marker that never fires can be explained.
		r.tl.Meta.FaultInjection = rep.FaultInjection
		if err := r.tw.Meta(r.tl.Meta); err != nil {
			return infra("cannot write the timeline", "", err)
		}
	}
	if err != nil || !ok || rep.FaultInjection == nil || *rep.FaultInjection {
		return nil // the service cannot tell; fault hits decide later
	}
	fix := "build the service with `chaoskit build -o BINARY PACKAGE` (a fault-injection build), not a plain go build"
	if r.sc.Target.Demo != nil {
		fix = "build chaoskit with `make build` (a fault-injection build) and run bin/chaoskit, not a plain `go build` or `go install` binary"
	}
	return infra("the target's failpoint markers are inert: it was built without failpoint rewriting, so no fault would fire", fix, nil)
}

// startSampler starts sampling the target's state endpoint, if the
// scenario has one, and returns the function that stops it.
func (r *run) startSampler() func() {
	st := r.sc.Target.State
	if st == nil {
		return func() {}
	}
	r.sampler = &sampler{url: r.tgt.baseURL + st.Path, client: r.tgt.client,
		record: func(at time.Time, doc map[string]any, err error) {
			e := timeline.Event{Time: at, Kind: timeline.State, Phase: r.phase.Load().(string), Data: doc}
			if err != nil {
				e.Message = "state sample failed: " + err.Error()
			}
			r.event(e)
		}}
	ctx, cancel := context.WithCancel(context.Background())
	tick := time.NewTicker(st.Interval.D())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.sampler.run(ctx, tick.C)
	}()
	return func() {
		cancel()
		tick.Stop()
		<-done
	}
}

// stopTarget stops a target chaoskit started, SIGTERM then SIGKILL.
func (r *run) stopTarget() {
	if r.tgt == nil || r.tgt.proc == nil {
		return
	}
	p := r.tgt.proc
	r.noteExit()
	if p.exited() {
		return
	}
	killed := p.stop(r.sc.Target.StopGrace.D())
	msg := "stopped"
	if killed {
		msg = "killed"
	}
	r.event(processEvent(msg, map[string]any{"pid": p.pid(), "grace_ns": r.sc.Target.StopGrace.D()}))
}

// noteExit records, once, that the target exited on its own.
func (r *run) noteExit() {
	p := r.tgt.proc
	if p == nil || !p.exited() {
		return
	}
	r.exitOnce.Do(func() {
		r.event(processEvent("exited", map[string]any{"pid": p.pid(), "status": p.exitDescription()}))
	})
}

func (r *run) event(e timeline.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r.tlMu.Lock()
	r.tl.Events = append(r.tl.Events, e)
	r.tlMu.Unlock()
	_ = r.tw.Event(e)
}

func processEvent(what string, data map[string]any) timeline.Event {
	return timeline.Event{Time: time.Now(), Kind: timeline.Process, Message: what, Data: data}
}

func (r *run) phases(ctx context.Context) error {
	for i := range r.sc.Phases {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.runPhase(ctx, &r.sc.Phases[i]); err != nil {
			return err
		}
	}
	return nil
}
