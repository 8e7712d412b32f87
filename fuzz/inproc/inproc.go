// Package inproc runs fault schedules against a service in this process:
// its HTTP handler served on a loopback port, its failpoints switched
// through inject's control handler (with a token of the trial's own) in the
// same process, and the load, the timeline and the judging those of
// `chaoskit run` (the runner, real vegeta load over loopback, fuzz.Judge).
//
// It is what lets `go test -fuzz` drive schedules decoded from the fuzzing
// engine's bytes (fuzz.Decode) against a service, so that the engine's
// coverage reaches into the service's own code: see FuzzShopInProcess. The
// failpoint markers must be live, which takes a build rewritten by
// failpoint-toolexec (`make fuzz` and `make test` build this package's
// tests so).
package inproc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"

	"github.com/pingcap/failpoint"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/fuzz/trials"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
)

// Service starts a fresh instance of the service for one trial and returns
// its handler and a function that stops it.
type Service func(ctx context.Context) (http.Handler, func() error, error)

// Trier is a fuzz.Trier that runs each schedule against a fresh instance
// of an in-process service. Failpoints are global to a process, so trials
// run one at a time, whatever the number of Triers.
type Trier struct {
	// Base is the fuzz scenario; its target is replaced by the in-process
	// service (its readiness probe, state probe and hit report paths are
	// kept).
	Base *plan.Scenario
	// Load are the options the trial scenarios load with (the catalog).
	Load plan.Options
	// Run are the runner's options; Dir is set per trial.
	Run runner.Options
	// Dir holds each trial's scenario file and run directory.
	Dir string
	// Service starts the service.
	Service Service
}

// trialMu serialises trials: failpoints are process-wide.
var trialMu sync.Mutex

// Try implements fuzz.Trier. The scenario file written to Dir names the
// base scenario's own target, so `chaoskit run` replays a schedule against
// the service as a process.
func (t *Trier) Try(ctx context.Context, label string, s fuzz.Schedule) (o *fuzz.Outcome, err error) {
	trialMu.Lock()
	defer trialMu.Unlock()
	sc, err := trials.Write(t.Base, s, label, t.Dir, t.Load)
	if err != nil {
		return nil, err
	}
	file := sc.File

	h, stop, err := t.Service(ctx)
	if err != nil {
		return nil, &runner.InfraError{Msg: "cannot start the in-process service", Err: err}
	}
	svc := httptest.NewServer(h) // 127.0.0.1
	// The control endpoint takes a token of the trial's own, as the one
	// inject serves in a started service does.
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		stop()
		svc.Close()
		return nil, &runner.InfraError{Msg: "cannot make a control token", Err: err}
	}
	opts := t.Run
	opts.ControlToken = hex.EncodeToString(tok)
	ctrl := httptest.NewServer(inject.ControlHandler(opts.ControlToken))
	defer func() {
		ctrl.Close()
		svc.Close()
		// The runner switches every fault off on every way out; a fault
		// left on here would leak into the next trial.
		for _, p := range sc.Phases {
			for _, f := range p.Faults {
				_ = failpoint.Disable(f.Path)
			}
		}
		if serr := stop(); serr != nil && err == nil {
			err = &runner.InfraError{Msg: "the in-process service did not stop cleanly", Err: serr}
		}
	}()
	sc.Bind(plan.Target{URL: svc.URL, Failpoints: ctrl.URL})
	o, err = trials.Run(ctx, sc, opts, filepath.Join(t.Dir, label))
	if o != nil {
		o.File = file
	}
	return o, err
}
