package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// stepsScenario runs the test binary as a target for one phase of
// %[2]s, with the setup and teardown steps %[3]s, written in the
// scenario's directory %[4]s.
const stepsScenario = `name: steps
target:
  command:
    argv: [%[1]s]
    env: {RUNNER_TEST_SERVE: "127.0.0.1:{port}"}
  url: http://127.0.0.1:{port}
  ready: {path: /}
load:
  rate: 20/s
  requests: [{path: /}]
phases:
  - name: p
    duration: %[2]s
%[3]s
`

// stepsRun runs stepsScenario in a directory of its own, cancelling the
// run's context when cancelAt (an event kind) is first recorded, and
// returns the run's result, its log, its error and the directory.
func stepsRun(t *testing.T, duration, steps string, cancelAt timeline.EventKind) (*Result, string, error, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "steps.yaml")
	sc, err := plan.Parse(file, []byte(fmt.Sprintf(stepsScenario, self, duration, strings.ReplaceAll(steps, "DIR", dir))), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log bytes.Buffer
	res, err := Run(ctx, sc, Options{Dir: filepath.Join(dir, "run"), Self: "unused", Log: &log, onEvent: func(e timeline.Event) {
		if e.Kind == cancelAt {
			cancel()
		}
	}})
	return res, log.String(), err, dir
}

// order is the kinds and messages of a run's setup, phase, teardown and
// target process events, in the order they were recorded.
func order(tl *timeline.Timeline) []string {
	return events(tl, timeline.Setup, timeline.PhaseStart, timeline.PhaseEnd, timeline.Teardown, timeline.Process)
}

func readText(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestTeardownRunsAfterTheLastPhase: the teardown steps run in order after
// the last phase and before the target is stopped, with what the setup
// captured from a program's stdout, whole or by a pattern; one that fails makes the run's exit 3
// with its output, and the steps after it still run.
func TestTeardownRunsAfterTheLastPhase(t *testing.T) {
	res, log, err, dir := stepsRun(t, "300ms", `setup:
  - name: seed
    run: [sh, -c, "echo seeded > DIR/seeded; echo '  tok-7  '"]
    capture: {token: "{stdout}"}
  - name: count
    run: [sh, -c, "echo rows=3 >&2; echo counted; echo rows=12"]
    capture: {rows: "{regexp.rows=([0-9]+)}"}
teardown:
  - name: note
    run: [sh, -c, "echo \"bye $TOKEN {capture.rows}\" >> DIR/log"]
    env: {TOKEN: "{capture.token}"}
  - name: broken
    run: [sh, -c, "echo it broke >&2; exit 4"]
  - name: after
    run: [sh, -c, "echo after >> DIR/log"]
  - name: still up
    http: GET /`, "")
	var ie *InfraError
	if !errors.As(err, &ie) || exitcode.Of(err) != exitcode.Infra {
		t.Fatalf("err = %v, want an infrastructure error (exit 3)\n%s", err, log)
	}
	for _, want := range []string{`teardown step "broken" failed`, "exit status 4", "it broke"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if got := readText(t, filepath.Join(dir, "log")); got != "bye tok-7 12\nafter\n" {
		t.Errorf("the teardown steps wrote %q, want the note with the captured token, then the step after the broken one", got)
	}
	got := strings.Join(order(res.Timeline), ", ")
	want := "setup seed, setup count, process started, phase_start, phase_end, teardown note, teardown broken, teardown after, teardown still up, process stopped target"
	if got != want {
		t.Errorf("events\n %s\nwant\n %s", got, want)
	}
	for _, e := range res.Timeline.Events {
		if e.Kind != timeline.Teardown {
			continue
		}
		if d, _ := timeline.Number(e.Data["duration_ns"]); d <= 0 {
			t.Errorf("teardown step %q has no duration: %v", e.Message, e.Data)
		}
		if _, failed := e.Data["error"]; failed != (e.Message == "broken") {
			t.Errorf("teardown step %q: error %v", e.Message, e.Data["error"])
		}
	}
	if out := readText(t, filepath.Join(res.Dir, StepsDir, "teardown-2.stderr")); out != "it broke\n" {
		t.Errorf("the broken step's stderr in the run directory: %q", out)
	}
}

// TestTeardownRunsWhenTheRunStopsEarly: interrupted in its phase, the run
// still runs its teardown, the target up for it; a setup step that fails
// after another ran is torn down too, the steps that need what it would
// have captured skipped.
func TestTeardownRunsWhenTheRunStopsEarly(t *testing.T) {
	t.Run("interrupted", func(t *testing.T) {
		res, log, err, dir := stepsRun(t, "1m", `teardown:
  - {name: note, run: [sh, -c, "echo torn down >> DIR/log"]}
  - {name: still up, http: GET /}`, timeline.PhaseStart)
		if !errors.Is(err, ErrInterrupted) {
			t.Fatalf("err = %v, want the run interrupted\n%s", err, log)
		}
		if got := readText(t, filepath.Join(dir, "log")); got != "torn down\n" {
			t.Errorf("teardown wrote %q", got)
		}
		got := strings.Join(order(res.Timeline), ", ")
		if want := "process started, phase_start, phase_end, teardown note, teardown still up, process stopped target"; got != want {
			t.Errorf("events\n %s\nwant\n %s", got, want)
		}
	})
	t.Run("a setup step fails", func(t *testing.T) {
		res, log, err, dir := stepsRun(t, "1m", `setup:
  - {name: first, run: [sh, -c, "echo first >> DIR/log"]}
  - {name: fails, run: [sh, -c, "exit 1"], capture: {id: "{stdout}"}}
teardown:
  - {name: uses id, run: [echo, "{capture.id}"]}
  - {name: note, run: [sh, -c, "echo torn down >> DIR/log"]}`, "")
		if err == nil || !strings.Contains(err.Error(), `setup step "fails" failed`) {
			t.Fatalf("err = %v, want the setup step's failure\n%s", err, log)
		}
		if got := readText(t, filepath.Join(dir, "log")); got != "first\ntorn down\n" {
			t.Errorf("setup and teardown wrote %q", got)
		}
		for _, e := range res.Timeline.Events {
			if e.Kind == timeline.Teardown && e.Message == "uses id" && !strings.Contains(fmt.Sprint(e.Data["skipped"]), "{capture.id}") {
				t.Errorf("the step using a capture never made: %v, want it skipped", e.Data)
			}
		}
	})
}

// TestRunStepTimeoutKillsItsProcessTree: a program that outlives its
// step's timeout is killed with everything it started, also a process
// that left its process group, and the run stops with exit 3.
func TestRunStepTimeoutKillsItsProcessTree(t *testing.T) {
	if !p0Subreaper(t) {
		t.Skip("the kernel refuses PR_SET_CHILD_SUBREAPER")
	}
	_, log, err, dir := stepsRun(t, "300ms", `setup:
  - name: hangs
    run: [sh, -c, "sleep 60 & echo $! > DIR/pids; setsid sleep 60 & echo $! >> DIR/pids; echo started; wait"]
    timeout: 500ms`, "")
	if exitcode.Of(err) != exitcode.Infra || !strings.Contains(err.Error(), "did not finish within 500ms") || !strings.Contains(err.Error(), "started") {
		t.Fatalf("err = %v, want exit 3 for the timeout, with the step's output\n%s", err, log)
	}
	pids := strings.Fields(readText(t, filepath.Join(dir, "pids")))
	if len(pids) != 2 {
		t.Fatalf("pids %q", pids)
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		if processAlive(pid) {
			t.Errorf("process %d the step started outlived it", pid)
		}
	}
}

// TestRunStepPrintsALongLine: a step whose program prints a line of 1 MiB
// (16 times what a line scanner takes) runs to its end, its whole output
// kept in the run directory, and a value it printed before the long line
// is still captured.
func TestRunStepPrintsALongLine(t *testing.T) {
	res, log, err, dir := stepsRun(t, "200ms", `setup:
  - name: long
    run: [sh, -c, "echo id=42; head -c 1048576 /dev/zero | tr '\\0' x; echo; echo done"]
    capture: {id: "{regexp.id=([0-9]+)}"}
    timeout: 30s
teardown:
  - {name: note, run: [sh, -c, "echo {capture.id} >> DIR/log"]}`, "")
	if err != nil {
		t.Fatalf("err = %v\n%s", err, log)
	}
	if got := readText(t, filepath.Join(dir, "log")); got != "42\n" {
		t.Errorf("the teardown wrote %q, want the captured id", got)
	}
	out := readText(t, filepath.Join(res.Dir, StepsDir, "setup-1.stdout"))
	if want := len("id=42\n") + 1<<20 + len("\ndone\n"); len(out) != want || !strings.HasSuffix(out, "x\ndone\n") {
		t.Errorf("the step's stdout in the run directory has %d bytes, want %d ending in the line after the long one", len(out), want)
	}
}

// TestReadLinesBoundsALine: readLines copies every byte and hands on each
// line, at most maxLine bytes of it, line endings removed.
func TestReadLinesBoundsALine(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	in := "a\r\n" + long + "\nb\n\nlast"
	var out bytes.Buffer
	var lines []string
	readLines(strings.NewReader(in), &out, func(l string) { lines = append(lines, l) })
	if out.String() != in {
		t.Errorf("copied %d bytes, want %d", out.Len(), len(in))
	}
	want := []string{"a", long[:maxLine], "b", "", "last"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d has %d bytes, want %d", i, len(lines[i]), len(want[i]))
		}
	}
}
