// Package runner carries out a scenario: it starts the target, drives load
// at it with vegeta phase by phase, switches each phase's faults on and off
// through the failpoint control endpoint, and records everything on a
// timeline streamed to the run directory.
//
// Whatever happens (normal end, target crash, cancellation, a panic in
// chaoskit) every fault the run enabled is disabled again and the target
// process is stopped before Run returns.
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/inject"
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
	// Log receives one line per phase; nil discards.
	Log io.Writer
	// ReadyTimeout bounds the wait for the target; zero means 15s.
	ReadyTimeout time.Duration
	// Tool is the version string recorded on the timeline.
	Tool string
}

// Result is what a run recorded.
type Result struct {
	Timeline *timeline.Timeline
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

func infra(msg, fix string, err error) *InfraError { return &InfraError{Msg: msg, Fix: fix, Err: err} }

// ErrInterrupted is returned (wrapped) when the context was cancelled: the
// run stopped early, after rolling back its faults.
var ErrInterrupted = errors.New("run interrupted")

// FaultRecord is the file in a run directory that lists every fault the run
// enabled, written before each is enabled, so a run killed with SIGKILL can
// still be rolled back (see Rollback).
const FaultRecord = "faults.json"

// ResultsFile holds the raw vegeta results, readable by `vegeta report`.
const ResultsFile = "results.bin"

type run struct {
	sc     *scenarios.Scenario
	opts   Options
	dir    string
	tw     *timeline.Writer
	tl     *timeline.Timeline
	tlMu   sync.Mutex
	tgt    *target
	seq    atomic.Uint64
	keep   func(string) bool
	record faultRecord
	resEnc vegeta.Encoder
	// enabled holds the faults switched on and not yet confirmed off.
	enabled map[string]bool
}

type faultRecord struct {
	Control string   `json:"control"`
	Points  []string `json:"points"`
}

// Run carries out sc. The returned Result is non-nil whenever the run
// directory was created, even with an error, and holds what was recorded.
func Run(ctx context.Context, sc *scenarios.Scenario, opts Options) (res *Result, err error) {
	if opts.Self == "" {
		if opts.Self, err = os.Executable(); err != nil {
			return nil, infra("cannot find the chaoskit executable", "", err)
		}
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 15 * time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if err := prepareDir(opts.Dir); err != nil {
		return nil, infra("cannot create the run directory", "", err)
	}
	r := &run{sc: sc, opts: opts, dir: opts.Dir, enabled: map[string]bool{}, keep: keepHeader,
		tl: &timeline.Timeline{}}
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
	r.resEnc = vegeta.NewEncoder(rf)
	r.tw = timeline.NewWriter(tf)
	res = &Result{Timeline: r.tl, Dir: r.dir}
	if sc.File != "" {
		if data, err := readScenarioSource(sc.File); err == nil {
			_ = os.WriteFile(filepath.Join(r.dir, "scenario.yaml"), data, 0o644)
		}
	}

	// Every way out goes through here: faults off, target stopped, the
	// timeline closed. A panic unwinds through it too.
	defer func() {
		if rbErr := r.rollback(); rbErr != nil && (err == nil || errors.Is(err, ErrInterrupted)) {
			err = rbErr
		}
		if r.tgt != nil && r.tgt.proc != nil {
			r.tgt.proc.stop(3 * time.Second)
			r.event(processEvent("stopped", map[string]any{"pid": r.tgt.proc.pid()}))
		}
		msg := "completed"
		if err != nil {
			msg = err.Error()
		}
		r.event(timeline.Event{Time: time.Now(), Kind: timeline.RunEnd, Message: msg})
		_ = r.tw.Flush()
		r.tl.Complete = true
	}()

	r.tl.Meta = timeline.Meta{Scenario: sc.Name, File: sc.File, Start: time.Now(), Tool: opts.Tool}
	tgt, err := r.startTarget(ctx)
	r.tgt = tgt
	if err != nil {
		return res, interrupted(ctx, err)
	}
	r.tl.Meta.Target, r.tl.Meta.BaseURL, r.tl.Meta.Control = tgt.desc, tgt.baseURL, tgt.controlAddr
	if err := r.tw.Meta(r.tl.Meta); err != nil {
		return res, infra("cannot write the timeline", "", err)
	}
	if err := r.checkFaultsCanFire(ctx); err != nil {
		return res, err
	}
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

func readScenarioSource(path string) ([]byte, error) { return os.ReadFile(path) }

// prepareDir creates dir, replacing an earlier run's files in it.
func prepareDir(dir string) error {
	if dir == "" {
		return errors.New("no run directory given")
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
	if err != nil || !ok || rep.FaultInjection == nil || *rep.FaultInjection {
		return nil // the service cannot tell; fault hits decide later
	}
	return infra("the target's failpoint markers are inert: it was built without failpoint rewriting, so no fault would fire",
		"build chaoskit with `make build` (a fault-injection build) and run bin/chaoskit, not a plain `go build` or `go install` binary", nil)
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
	reqs, err := r.sc.Load.Expand()
	if err != nil {
		return err
	}
	client := newClient(r.sc.Load)
	defer client.CloseIdleConnections()
	tgts := make([]vegeta.Target, len(reqs))
	for i, q := range reqs {
		h := http.Header{}
		for k, v := range q.Headers {
			h.Set(k, v)
		}
		tgts[i] = vegeta.Target{Method: q.Method, URL: r.tgt.baseURL + q.Path, Header: h, Body: []byte(q.Body)}
	}
	var next atomic.Uint64
	targeter := func(t *vegeta.Target) error {
		*t = tgts[(next.Add(1)-1)%uint64(len(tgts))]
		return nil
	}
	total := time.Duration(0)
	for _, p := range r.sc.Phases {
		total += p.Duration.D()
	}
	for i := range r.sc.Phases {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.phase(ctx, &r.sc.Phases[i], client, targeter); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) phase(ctx context.Context, p *scenarios.Phase, client *http.Client, targeter vegeta.Targeter) error {
	boundary := time.Now()
	r.event(timeline.Event{Time: boundary, Kind: timeline.PhaseStart, Phase: p.Name, Planned: p.Duration.D()})
	before, _, _ := r.tgt.hits(ctx)
	for _, f := range p.Faults {
		if err := r.enable(ctx, p.Name, boundary, f); err != nil {
			return err
		}
	}

	atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(uint64(r.sc.Load.Workers)),
		vegeta.MaxWorkers(uint64(r.sc.Load.MaxWorkers)), vegeta.MaxBody(4<<20), vegeta.Redirects(vegeta.NoFollow))
	rate := vegeta.Rate{Freq: r.sc.Load.Rate.Freq, Per: r.sc.Load.Rate.Per}
	results := atk.Attack(targeter, rate, p.Duration.D(), r.sc.Name)
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	n, ok := 0, 0
	for res := range results {
		n++
		if res.Code >= 200 && res.Code < 400 {
			ok++
		}
		r.recordResult(p.Name, res)
	}
	stop()
	_ = r.tw.Flush()
	end := time.Now()
	r.event(timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: p.Name})

	var errs []error
	for _, f := range p.Faults {
		if err := r.disable(ctx, p.Name, end, f.Path); err != nil {
			errs = append(errs, err)
		}
	}
	if len(p.Faults) > 0 {
		after, ok, err := r.tgt.hits(context.WithoutCancel(ctx))
		if ok && err == nil {
			for _, f := range p.Faults {
				h := after.Hits[f.Path] - before.Hits[f.Path]
				r.event(timeline.Event{Time: time.Now(), Kind: timeline.FaultHits, Phase: p.Name, Point: f.Path, Hits: &h})
			}
		}
	}
	fmt.Fprintf(r.opts.Log, "  %-24s %6v  %5d requests  %5.1f%% 2xx/3xx%s\n", p.Name, end.Sub(boundary).Round(10*time.Millisecond), n, pct(ok, n), faultNote(p))
	if r.tgt.proc != nil && r.tgt.proc.exited() {
		return infra("the target exited during phase "+p.Name, "see target.stderr in the run directory", errors.New(r.tgt.proc.exitDescription()))
	}
	return errors.Join(errs...)
}

func faultNote(p *scenarios.Phase) string {
	if len(p.Faults) == 0 {
		return ""
	}
	var s []string
	for _, f := range p.Faults {
		s = append(s, f.Point+"="+f.Action)
	}
	return "  faults: " + strings.Join(s, ", ")
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// enable switches one fault on, recording it first so that a run killed
// right after can still be rolled back.
func (r *run) enable(ctx context.Context, phase string, boundary time.Time, f scenarios.Fault) error {
	r.enabled[f.Path] = true
	if err := r.saveRecord(); err != nil {
		return infra("cannot record the fault about to be enabled", "", err)
	}
	if err := r.tgt.control.Enable(ctx, f.Path, f.Term); err != nil {
		if errors.Is(err, inject.ErrUnreachable) {
			return infra("the failpoint control endpoint is unreachable", "check target.failpoints", err)
		}
		return infra("the control endpoint refused a fault", "check the fault's action and value, or the raw term", err)
	}
	r.event(timeline.Event{Time: time.Now(), Kind: timeline.FaultOn, Phase: phase, Point: f.Path, Term: f.Term, Ack: time.Since(boundary)})
	return nil
}

func (r *run) disable(ctx context.Context, phase string, boundary time.Time, path string) error {
	if err := r.disableWithRetry(context.WithoutCancel(ctx), path); err != nil {
		return err
	}
	delete(r.enabled, path)
	r.event(timeline.Event{Time: time.Now(), Kind: timeline.FaultOff, Phase: phase, Point: path, Ack: time.Since(boundary)})
	return nil
}

// disableWithRetry tries hard to switch a fault off: an endpoint that
// hiccups must not leave a service faulted.
func (r *run) disableWithRetry(ctx context.Context, path string) error {
	var err error
	for attempt, wait := 0, 50*time.Millisecond; attempt < 5; attempt, wait = attempt+1, wait*2 {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = r.tgt.control.Disable(actx, path)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(wait)
	}
	return infra("could not disable fault "+path, "run `chaoskit rollback "+r.dir+"` once the endpoint answers", err)
}

func (r *run) saveRecord() error {
	rec := faultRecord{Control: r.tgt.controlAddr}
	for p := range r.enabled {
		rec.Points = append(rec.Points, p)
	}
	sort.Strings(rec.Points)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(r.dir, FaultRecord+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.dir, FaultRecord))
}

// rollback disables every fault still on and checks the endpoint agrees.
func (r *run) rollback() error {
	if r.tgt == nil || r.tgt.control == nil || len(r.enabled) == 0 {
		return nil
	}
	var errs []error
	for path := range r.enabled {
		if err := r.disableWithRetry(context.Background(), path); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(r.enabled, path)
		r.event(timeline.Event{Time: time.Now(), Kind: timeline.FaultOff, Point: path, Message: "rolled back"})
	}
	return errors.Join(errs...)
}

// keepHeader says which response headers the timeline keeps.
func keepHeader(name string) bool {
	return strings.HasPrefix(name, "X-Chaoskit-") || name == "Retry-After" || name == "Content-Type"
}

func (r *run) recordResult(phase string, res *vegeta.Result) {
	_ = r.resEnc.Encode(res)
	q := timeline.Request{
		Seq: r.seq.Add(1), Phase: phase, Time: res.Timestamp, Method: res.Method, URL: res.URL,
		Target: res.Method + " " + strings.TrimPrefix(res.URL, r.tgt.baseURL), Status: int(res.Code),
		Latency: res.Latency, Error: res.Error, BodySize: len(res.Body),
	}
	if len(res.Body) > 0 {
		sum := sha256.Sum256(res.Body)
		q.BodyHash = hex.EncodeToString(sum[:])
		if len(res.Body) <= timeline.MaxBody {
			q.Body = string(res.Body)
		}
	}
	for k, v := range res.Headers {
		if len(v) > 0 && r.keep(k) {
			if q.Headers == nil {
				q.Headers = map[string]string{}
			}
			q.Headers[k] = v[0]
		}
	}
	r.tlMu.Lock()
	r.tl.Requests = append(r.tl.Requests, q)
	r.tlMu.Unlock()
	_ = r.tw.Request(&q)
}

func newClient(l scenarios.Load) *http.Client {
	return &http.Client{
		Timeout: l.Timeout.D(),
		Transport: &http.Transport{
			MaxIdleConnsPerHost: l.MaxWorkers,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
