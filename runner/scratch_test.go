package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/plan"
)

// tempNoteEnv asks serveForTest to make a temporary file it never removes
// and to write its name to the file the variable names.
const tempNoteEnv = "RUNNER_TEST_TEMP_NOTE"

// copyFromEnv and copyToEnv ask serveForTest to copy a file when it
// starts.
const copyFromEnv, copyToEnv = "RUNNER_TEST_COPY_FROM", "RUNNER_TEST_COPY_TO"

const scratchScenario = `name: scratch
setup:
  - name: step
    run: [sh, -c, "echo policy > \"$TMPDIR/step-left\"; echo \"$TMPDIR\" > %[2]s/step"]
target:
  command:
    argv: [%[1]s]
    env: {RUNNER_TEST_SERVE: "127.0.0.1:{port}", RUNNER_TEST_TEMP_NOTE: "%[2]s/target", RUNNER_TEST_COPY_FROM: "{tmpdir}/step-left", RUNNER_TEST_COPY_TO: "%[2]s/copied"}
  url: http://127.0.0.1:{port}
  ready: {path: /}
load:
  rate: 20/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 200ms
`

// TestTheRunsTemporaryFilesGoWithIt: the target and a setup program get a
// TMPDIR of the run's own, in the system's temporary directory, which the
// target's command names as {tmpdir}: it reads a file the setup wrote
// there. What they leave there is gone when the run ends, as is the
// directory.
func TestTheRunsTemporaryFilesGoWithIt(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc, err := plan.Parse(filepath.Join(dir, "s.yaml"), []byte(fmt.Sprintf(scratchScenario, self, dir)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	if _, err := Run(context.Background(), sc, Options{Dir: filepath.Join(dir, "run"), Self: "unused", Log: &log}); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	step := strings.TrimSpace(readText(t, filepath.Join(dir, "step")))
	left := readText(t, filepath.Join(dir, "target"))
	want := filepath.Join(os.TempDir(), scratchPrefix+strconv.Itoa(os.Getpid())+"-")
	if !strings.HasPrefix(step, want) {
		t.Fatalf("the setup program's TMPDIR is %q, want one in %s*", step, want)
	}
	if got := readText(t, filepath.Join(dir, "copied")); got != "policy\n" {
		t.Errorf("the target read %q from {tmpdir}/step-left, want what the setup wrote there", got)
	}
	if filepath.Dir(left) != step {
		t.Errorf("the target made its temporary file at %s, not in the run's directory %s", left, step)
	}
	for _, p := range []string{left, filepath.Join(step, "step-left"), step} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the run (%v)", p, err)
		}
	}
}

// TestScratchOfAKilledChaoskitIsSwept: a scratch directory whose chaoskit
// is gone is removed by the next run; one of a live process is not.
func TestScratchOfAKilledChaoskitIsSwept(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	gone, err := os.MkdirTemp("", scratchPrefix+"999999999-")
	if err != nil {
		t.Fatal(err)
	}
	alive, err := os.MkdirTemp("", scratchPrefix+strconv.Itoa(os.Getppid())+"-")
	if err != nil {
		t.Fatal(err)
	}
	r := &run{}
	if err := r.prepareScratch(); err != nil {
		t.Fatal(err)
	}
	defer r.removeScratch()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the directory of a chaoskit that is gone is still there (%v)", err)
	}
	if _, err := os.Stat(alive); err != nil {
		t.Errorf("the directory of a live process was removed: %v", err)
	}
}
