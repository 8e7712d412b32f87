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
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/internal/termline"
	"github.com/chaoskit/chaoskit/netfault"
	"github.com/chaoskit/chaoskit/plan"
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
	// Width is the width in columns the lines that stay (the phase lines,
	// the notes) wrap at spaces within (0: no limit); LiveWidth is the
	// width of the terminal Log is, which the live line is cut to (0: no
	// limit).
	Width, LiveWidth int
	// Overall, when set, says where the whole invocation is, given how
	// much of this run's planned phase time has passed ("2/10, 1m40s
	// left"): the live line ends with it, and keeps it when it is cut to
	// LiveWidth.
	Overall func(done time.Duration) string
	// Tool is the version string recorded on the timeline.
	Tool string
	// ControlToken is sent to the failpoint control endpoint of a target
	// chaoskit does not start (a URL target), such as an in-process
	// inject.ControlHandler; empty means $CHAOSKIT_FAILPOINTS_TOKEN. A
	// target chaoskit starts gets a token made for the run.
	ControlToken string
	// StateDir indexes the faults of unfinished runs by control endpoint,
	// so the next run against the same endpoint rolls back what a killed
	// run left on. Empty disables the index.
	StateDir string
	// RateScale is recorded on the timeline (the scenario's rates are
	// already scaled when it is loaded).
	RateScale float64
	// Shard is the slice of every phase's load this run sends (the zero
	// value: all of it). Shard 1 switches the faults, the others send load
	// only; NoFaults makes shard 1 send load only too, for a separate
	// FaultsOnly run, which switches the faults and sends no load.
	// `chaoskit report --merge` judges the shards' run directories as one
	// run.
	Shard      Shard
	NoFaults   bool
	FaultsOnly bool
	// StartAt, when set, is the moment the first phase starts (the target
	// ready before it): shards started at different times, as a CI matrix
	// or a Kubernetes Indexed Job starts them, run their phases together.
	StartAt time.Time

	// onEvent, when set, sees each event as it is recorded: a test that
	// needs an order waits for the event rather than for a sleep.
	onEvent func(timeline.Event)
}

// Result is what a run recorded. Timeline holds the run's meta and events
// only: the requests are streamed to the run directory as they complete
// and never held (read them with timeline.OpenDir(Dir), or timeline.Load
// for a short run).
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
	ScenarioCopy = plan.CopyFile
	// SummaryFile is the run's summary (see Summary).
	SummaryFile = "run.json"
)

type run struct {
	sc   *plan.Scenario
	opts Options
	dir  string
	tw   *timeline.Writer
	tl   *timeline.Timeline
	tlMu sync.Mutex
	tgt  *target
	// tgtProc is the target process chaoskit started, if it did, across
	// restarts; deps are the dependencies started, in order; ports are the
	// ports of the scenario's placeholders; proxies run the scenario's
	// proxies.
	tgtProc *managed
	deps    []*dependency
	ports   map[string]int
	// probeClients are the clients of probes sent to a dependency, one
	// per probe, made at its first reading and kept, so that its
	// connections are reused.
	probeClients sync.Map
	// passwords are the dependencies' passwords made for this run
	// ({password:NAME}).
	passwords map[string]string
	// captures are the values the setup steps captured ({capture.NAME}).
	captures plan.Captures
	// tearDown says the setup has begun, so the teardown steps run on
	// every way out; targetUp that the target became ready, so the HTTP
	// ones can.
	tearDown, targetUp bool
	// scratch is the run's directory for temporary files, outside the
	// run directory (see prepareScratch).
	scratch string
	// tls is how the run speaks TLS to the target (target.tls).
	tls targetTLS
	// grpc is the connection to target.grpc, when a phase calls it.
	grpc     *grpcClient
	proxies  *netfault.Proxies
	proxyLog *os.File
	// servers are the proxies the fault sources run (those of a protocol
	// other than tcp), by name.
	servers map[string]fault.Server
	// phaseBase is how many requests the phases before the running one
	// sent: the running phase's requests are numbered from it. reqSeq feeds
	// {seq} templates.
	phaseBase uint64
	reqSeq    atomic.Uint64
	// keep says which response headers the timeline keeps (those the
	// scenario names, see plan.Scenario.RecordedHeaders); classify gives
	// each request its class for the progress lines and run.json, the
	// classifier the contracts judge by.
	keep     func(string) bool
	classify func(*timeline.Request) timeline.Class
	resBuf   *bufio.Writer
	resEnc   vegeta.Encoder
	faults   *faults
	sampler  *sampler
	phase    atomic.Value // name of the running phase
	summary  Summary
	exitOnce sync.Once
	// stopRun ends the run's context with a cause; werr is the first
	// record that could not be written.
	stopRun func(error)
	// control is the context of requests to the control endpoint: it
	// outlives the run's context by stopBudget (see afterStop).
	control context.Context
	writeMu sync.Mutex
	werr    error
	// rw streams the requests to RequestsFile (nil until the target is
	// up); writes are the acknowledged writes kept for the read-back,
	// written by the recorder and read after the last phase.
	rw            *timeline.RequestWriter
	writes        []ackedWrite
	writesDropped int
	// stepCaps holds, from a chain step's answer until it is recorded,
	// what its iteration captured, by its result (for verify:);
	// verifications are the verification requests kept for after the
	// read-back, written by the recorder.
	stepCaps             sync.Map
	verifications        []pendingVerify
	verificationsDropped int
}

// Run carries out sc. The returned Result is non-nil whenever the run
// directory was created, even with an error, and holds what was recorded.
//
// Before Run returns, everything the run recorded is on stable storage
// (written and synced): the timeline, the results, run.json and the fault
// record. A record that could not be written (a full disk, a read-only
// directory) fails the run with an InfraError naming the file, and its
// cause is kept in the run directory's marker where a later `chaoskit
// report` finds it.
func Run(ctx context.Context, sc *plan.Scenario, opts Options) (res *Result, err error) {
	if opts.Self == "" {
		if opts.Self, err = os.Executable(); err != nil {
			return nil, infra("cannot find the chaoskit executable", "", err)
		}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	// Every line that stays wraps at spaces within the width.
	opts.Log = termline.NewWriter(opts.Log, opts.Width, "      ")
	if !opts.Shard.Whole() && opts.Shard.Index > 1 || opts.NoFaults {
		sc = withoutFaults(sc)
	}
	unlock, err := prepareDir(ctx, opts.Dir, outdir.Marker{Name: sc.Name, Tool: opts.Tool}, sc.Reach)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// A record that cannot be written stops the run as an interruption
	// does, through its own context, and is the run's error.
	ctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	control, stopControl := afterStop(ctx, stopBudget)
	defer stopControl()
	r := &run{sc: sc, opts: opts, dir: opts.Dir, keep: headerFilter(sc.RecordedHeaders()), classify: sc.Classifier(), tl: &timeline.Timeline{}, stopRun: stopRun, control: control}
	r.faults = &faults{run: r, on: map[string]bool{}}
	r.phase.Store("")
	tf, err := os.Create(filepath.Join(r.dir, timeline.FileName))
	if err != nil {
		return nil, infra("cannot write the timeline", "", err)
	}
	r.tw = timeline.NewWriter(tf)
	defer tf.Close()
	qf, err := os.Create(filepath.Join(r.dir, timeline.RequestsFile))
	if err != nil {
		return nil, infra("cannot write the timeline", "", err)
	}
	defer qf.Close()
	rf, err := os.Create(filepath.Join(r.dir, ResultsFile))
	if err != nil {
		return nil, infra("cannot write the results file", "", err)
	}
	defer rf.Close()
	r.resBuf = bufio.NewWriterSize(rf, 64<<10)
	r.resEnc = vegeta.NewEncoder(r.resBuf)
	res = &Result{Timeline: r.tl, Summary: &r.summary, Dir: r.dir}
	r.tl.Meta = timeline.Meta{Scenario: sc.Name, File: sc.File, Start: time.Now(), Tool: opts.Tool, Vars: sc.Values, RateScale: opts.RateScale,
		Shard: opts.Shard.String(), FaultsOnly: opts.FaultsOnly, ScenarioSHA256: plan.CopyHash(sc)}
	if len(r.tl.Meta.Vars) == 0 {
		r.tl.Meta.Vars = nil
	}
	r.summary.begin(sc, r.tl.Meta.Start)

	stopSampler := func() {}
	// Every way out goes through here: sampling stopped, faults off, target
	// stopped, the record written out and synced. A panic unwinds through
	// it too.
	defer func() {
		if p := recover(); p != nil {
			err = infra(fmt.Sprintf("chaoskit panicked: %v", p), "this is a bug in chaoskit; the run's faults were rolled back", fmt.Errorf("%s", debug.Stack()))
		}
		stopSampler()
		if rbErr := r.faults.rollback(); rbErr != nil && (err == nil || errors.Is(err, ErrInterrupted)) {
			err = rbErr
		}
		// Teardown runs with every fault off and before anything it may
		// need (the target, the dependencies) is stopped. Its failure is
		// the run's error only when nothing else went wrong first.
		if r.tearDown {
			if tErr := r.runTeardown(ctx); tErr != nil && err == nil {
				err = tErr
			}
		}
		r.grpc.close()
		r.stopTarget(ctx)
		r.removeScratch()
		if r.tgt != nil {
			r.tgt.client.CloseIdleConnections()
		}
		if pErr := r.stopProxies(); pErr != nil && err == nil {
			err = pErr
		}
		r.stopDeps(ctx)
		err = r.finish(err, rf, qf)
		if a := r.summary.FaultAcks; a.Count > 0 {
			fmt.Fprintf(opts.Log, "  fault switches: %d, acknowledged %v (p99) %v (max) after they were due\n", a.Count, a.P99, a.Max)
		}
	}()
	if err := plan.SaveCopy(r.dir, sc); err != nil {
		return res, r.writeFailed(plan.CopyFile, err)
	}
	if err := r.tw.Meta(r.tl.Meta); err != nil {
		return res, r.writeFailed(timeline.FileName, err)
	}

	if err := r.allocatePorts(); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.prepareScratch(); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.prepareTLS(); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.startDeps(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.startProxies(); err != nil {
		return res, r.stopped(ctx, err)
	}
	// Setup steps on the dependencies run before the target starts: it
	// may read what they seed when it starts. From here on, the teardown
	// runs on every way out.
	r.tearDown = true
	if err := r.runSetup(ctx, 0, sc.BeforeTarget()); err != nil {
		return res, r.stopped(ctx, err)
	}
	tgt, err := r.startTarget(ctx)
	r.tgt = tgt
	if tgt.proc != nil {
		r.tgtProc = newManaged(plan.TargetProcess, tgt.proc, sc.Target.StopGrace.D(), r.restartTarget)
	}
	if err != nil {
		return res, r.stopped(ctx, err)
	}
	r.targetUp = true
	r.tl.Meta.Target, r.tl.Meta.BaseURL, r.tl.Meta.Control = tgt.desc, tgt.baseURL, tgt.controlAddr
	r.rw = timeline.NewRequestWriter(qf, tgt.baseURL)
	if err := r.tw.Meta(r.tl.Meta); err != nil {
		return res, r.writeFailed(timeline.FileName, err)
	}
	if rb, err := rollbackPending(ctx, opts.StateDir, tgt.controlAddr, sc.Reach); err != nil {
		fmt.Fprintf(opts.Log, "  could not roll back the faults a killed run left at %s: %v\n", tgt.controlAddr, err)
	} else if len(rb.Disabled) > 0 {
		fmt.Fprintf(opts.Log, "  rolled back %d fault(s) a killed run (%s) left at %s\n", len(rb.Disabled), rb.Dir, tgt.controlAddr)
		for _, p := range rb.Disabled {
			r.event(timeline.Event{Kind: timeline.FaultOff, Point: p, Message: "rolled back: left on by the killed run in " + rb.Dir})
		}
	}
	if err := r.connectGRPC(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.runSetup(ctx, sc.BeforeTarget(), len(sc.Setup)); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.checkFaultsCanFire(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	stopSampler = r.startSampler()
	if err := r.waitStart(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	stopProbes := r.startProbes(ctx)
	err = r.phases(ctx)
	stopProbes()
	if err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.finalProbes(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.readBack(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	if err := r.verify(ctx); err != nil {
		return res, r.stopped(ctx, err)
	}
	r.recordPromQL(ctx)
	return res, r.stopped(ctx, nil)
}

// waitStart waits until Options.StartAt, if it is set and ahead.
func (r *run) waitStart(ctx context.Context) error {
	wait := time.Until(r.opts.StartAt)
	if r.opts.StartAt.IsZero() || wait <= 0 {
		return nil
	}
	fmt.Fprintf(r.opts.Log, "  waiting %v for the start at %s\n", wait.Round(time.Millisecond), r.opts.StartAt.Format(time.RFC3339))
	return sleepCtx(ctx, wait)
}

// stopBudget is how long requests to the control endpoint may go on once
// a run is stopping (Ctrl-C, a failed write): rolling back gets that long
// in all, so that chaoskit exits within a few seconds even when the
// endpoint hangs, and says what may still be on.
const stopBudget = 3 * time.Second

// afterStop returns a context that is not cancelled with ctx but ends
// budget after ctx does.
func afterStop(ctx context.Context, budget time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var mu sync.Mutex
	var timer *time.Timer
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		timer = time.AfterFunc(budget, func() {
			cancel(fmt.Errorf("the run stopped %v ago and the control endpoint has not answered since", budget))
		})
	})
	return c, func() {
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(nil)
	}
}

// controlCtx is the context of a request to the control endpoint.
func (r *run) controlCtx() context.Context {
	if r.control == nil {
		return context.Background()
	}
	return r.control
}

// stopped gives the error a stage of the run ended with its meaning: a
// record that could not be written, an interruption, or err itself.
func (r *run) stopped(ctx context.Context, err error) error {
	if werr := r.writeErr(); werr != nil {
		return werr
	}
	if err == nil {
		return nil
	}
	return interrupted(ctx, err)
}

func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(ctx))
	}
	return err
}

// writeFailed records that a file of the run directory could not be
// written: the run stops, and its error is an InfraError naming the file.
// Only the first failure counts; it is returned.
func (r *run) writeFailed(file string, err error) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	if r.werr == nil {
		r.werr = infra("cannot write "+filepath.Join(r.dir, file),
			"free space on the disk of the run directory or make it writable, or give --report-dir on another disk", err)
		if r.stopRun != nil {
			r.stopRun(r.werr)
		}
	}
	return r.werr
}

// writeErr is the first write failure of the run, or nil.
func (r *run) writeErr() error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	return r.werr
}

// finish closes the run's record: the run's end on the timeline, the
// timeline and the results written out and synced, run.json written, the
// run directory synced and the outcome noted in its marker. A write
// failure becomes the run's error unless an earlier error explains the
// run better (a failure to roll back, a panic).
func (r *run) finish(err error, rf, qf *os.File) error {
	if werr := r.writeErr(); werr != nil && (err == nil || errors.Is(err, ErrInterrupted) || errors.Is(err, context.Canceled)) {
		err = werr
	}
	msg := "completed"
	if err != nil {
		msg = err.Error()
	}
	r.event(timeline.Event{Kind: timeline.RunEnd, Message: msg})
	r.tl.Complete = true
	var werr error
	if e := r.resBuf.Flush(); e != nil {
		werr = r.writeFailed(ResultsFile, e)
	} else if e := rf.Sync(); e != nil {
		werr = r.writeFailed(ResultsFile, e)
	}
	if r.rw != nil {
		if e := r.rw.Close(); e != nil {
			werr = r.writeFailed(timeline.RequestsFile, e)
		}
	} else if e := qf.Sync(); e != nil {
		werr = r.writeFailed(timeline.RequestsFile, e)
	}
	if e := r.tw.Close(); e != nil {
		werr = r.writeFailed(timeline.FileName, e)
	}
	if werr != nil && err == nil {
		err = werr
	}
	r.summary.end(time.Now(), err, r.tl)
	if e := outdir.WriteJSON(filepath.Join(r.dir, SummaryFile), r.summary); e != nil && err == nil {
		err = r.writeFailed(SummaryFile, e)
	}
	if e := outdir.SyncDir(r.dir); e != nil && err == nil {
		err = r.writeFailed(".", e)
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	_ = outdir.RecordOutcome(r.dir, r.summary.Outcome, errText)
	return err
}

// checkFaultsCanFire refuses to run faults against a service whose markers
// are inert: a pass would be a lie.
func (r *run) checkFaultsCanFire(ctx context.Context) error {
	hasFaults := false
	for _, p := range r.sc.Phases {
		hasFaults = hasFaults || p.HasPointFaults()
	}
	if !hasFaults {
		return nil
	}
	if r.tgt.control == nil {
		return infra("the scenario switches faults but its target has no failpoint control endpoint", "set target.failpoints to the address of the service's failpoint control endpoint", nil)
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
	fix := "build the service with `chaoskit build --output-file BINARY PACKAGE` (a fault-injection build), not a plain go build, or mark its fault points with inject.NewSwitch, live in any build"
	return infra("the target's failpoint markers are inert: it was built without failpoint rewriting, so no fault would fire", fix, nil)
}

// stopTarget stops a target chaoskit started, SIGTERM then SIGKILL.
// A run that was stopped (Ctrl-C) gives the target at most
// interruptedGrace of its stop_grace: the user asked chaoskit to be done.
func (r *run) stopTarget(ctx context.Context) {
	if r.tgtProc == nil {
		return
	}
	r.tgtProc.resume()
	p, _, _ := r.tgtProc.current()
	r.noteExit()
	if p.exited() {
		return
	}
	grace := r.sc.Target.StopGrace.D()
	if ctx.Err() != nil {
		grace = min(grace, interruptedGrace)
	}
	st := p.stopTimed(syscall.SIGTERM, grace)
	msg := "stopped"
	if st.killed {
		msg = "killed"
	}
	r.event(processEvent(msg, st.data(plan.TargetProcess, map[string]any{"pid": p.pid(), timeline.StopAtEnd: true})))
}

// interruptedGrace bounds the stop grace of an interrupted run's target.
const interruptedGrace = time.Second

// noteExit records, once, that the target exited on its own.
func (r *run) noteExit() {
	if r.tgtProc == nil {
		return
	}
	p, planned, _ := r.tgtProc.current()
	if planned || !p.exited() {
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
	if err := r.tw.Event(e); err != nil {
		r.writeFailed(timeline.FileName, err)
	}
	if r.opts.onEvent != nil {
		r.opts.onEvent(e)
	}
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
