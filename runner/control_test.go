package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// controlRunScenario starts the test binary, which links inject, as a
// target that switches one failpoint; %[2]s adds to its env and %[3]s to
// its target.
const controlRunScenario = `name: control-run
target:
  command:
    argv: [%[1]s]
    env: {RUNNER_TEST_SERVE: "127.0.0.1:{port}"%[2]s}
  url: http://127.0.0.1:{port}
  ready: {path: /, timeout: %[4]s}
  points: [example.com/svc/store/query]
%[3]s
load:
  rate: 20/s
  timeout: 500ms
  requests: [{path: /}]
phases:
  - name: p
    duration: 400ms
    faults:
      - {point: example.com/svc/store/query, action: error}
`

func controlRun(t *testing.T, env, tgt string) (*Result, string, error) {
	return controlRunReady(t, env, tgt, "5s")
}

func controlRunReady(t *testing.T, env, tgt, ready string) (*Result, string, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := plan.Parse("control-run.yaml", []byte(fmt.Sprintf(controlRunScenario, self, env, tgt, ready)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	var log bytes.Buffer
	res, err := Run(context.Background(), sc, Options{Dir: filepath.Join(t.TempDir(), "run"), Self: "unused", Log: &log})
	return res, log.String(), err
}

// TestTheControlEndpointTakesOnlyTheRunsToken runs a target that serves
// inject's guarded control endpoint: chaoskit's own run switches the fault
// with the token it made, a service told another token is refused before
// the run starts, and one serving pingcap's open endpoint still runs but
// with a note that anyone could switch its faults.
func TestTheControlEndpointTakesOnlyTheRunsToken(t *testing.T) {
	res, log, err := controlRun(t, "", "")
	if err != nil {
		t.Fatalf("run with the run's token: %v\n%s", err, log)
	}
	if got := events(res.Timeline, timeline.FaultOn, timeline.FaultOff); len(got) != 2 {
		t.Errorf("fault events %q, want the fault on and off", got)
	}
	if strings.Contains(log, "without a token") {
		t.Errorf("the guarded endpoint was reported open:\n%s", log)
	}

	_, log, err = controlRun(t, `, `+inject.TokenEnv+`: not-the-runs`, "")
	if err == nil || !strings.Contains(err.Error(), "refused this run's token") {
		t.Errorf("a service holding another token: err = %v, want the token refused\n%s", err, log)
	}

	_, log, err = controlRun(t, `, `+inject.ControlEnv+`: "", GO_FAILPOINTS_HTTP: "127.0.0.1:{port:fp}"`, `  failpoints: 127.0.0.1:{port:fp}`)
	if err != nil {
		t.Fatalf("a service on pingcap's open endpoint: %v\n%s", err, log)
	}
	if !strings.Contains(log, "answers without a token") {
		t.Errorf("no note that the open endpoint takes anyone's request:\n%s", log)
	}
}

// TestAServiceWithoutTheEndpointIsToldHowToServeIt: a service that serves
// no control endpoint where chaoskit asked (one on pingcap/failpoint alone,
// here inject told to serve nothing) is refused with the way to serve it.
//
// The readiness timeout runs out by design; it must still leave a loaded
// machine time to start the service itself (700ms did not), or the error
// is about the service not listening.
func TestAServiceWithoutTheEndpointIsToldHowToServeIt(t *testing.T) {
	_, log, err := controlRunReady(t, `, `+inject.ControlEnv+`: ""`, "", "3s")
	var ie *InfraError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not ready within") || !strings.Contains(ie.Fix, "imports github.com/chaoskit/chaoskit/inject") || !strings.Contains(ie.Fix, "GO_FAILPOINTS_HTTP") {
		t.Fatalf("err = %v (hint %q), want the way to serve the endpoint\n%s", err, fixOf(ie), log)
	}
}

func fixOf(ie *InfraError) string {
	if ie == nil {
		return ""
	}
	return ie.Fix
}
