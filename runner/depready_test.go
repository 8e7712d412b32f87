package runner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

// depReadyScenario runs the test binary as target and dependency; %[2]s is
// the dependency's ready setting.
const depReadyScenario = `name: dep-ready
target:
  command:
    argv: [%[1]s]
    env: {RUNNER_TEST_SERVE: "127.0.0.1:{port}"}
  url: http://127.0.0.1:{port}
  ready: {path: /}
dependencies:
  - name: dep
    command:
      argv: [%[1]s]
      env: {RUNNER_TEST_SERVE: "127.0.0.1:{port:dep}"}
    ready: %[2]s
load:
  rate: 20/s
  timeout: 500ms
  requests: [{path: /}]
phases:
  - name: p
    duration: 300ms
`

func depReadyRun(t *testing.T, ready string) (*Result, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := plan.Parse("dep-ready.yaml", []byte(fmt.Sprintf(depReadyScenario, self, ready)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	return Run(context.Background(), sc, Options{Dir: filepath.Join("out", "run"), Self: "unused"})
}

// TestAReadyCommandLeavesNothingBehind: a readiness command that starts
// a process in the background and exits 0 must not leave that process
// running: it runs below a supervisor, as every child does.
func TestAReadyCommandLeavesNothingBehind(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	if _, err := depReadyRun(t, fmt.Sprintf(`{command: [sh, -c, "sleep 300 & echo $! > %s"]}`, pidFile)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the ready command's background process %d outlived it", pid)
	}
}

// TestADependencysFixedPortHeldByAnotherIsRefused: a ready.tcp on a fixed
// port something else already listens on would pass readiness on the
// foreign listener; the run refuses it before the dependency starts.
func TestADependencysFixedPortHeldByAnotherIsRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = depReadyRun(t, fmt.Sprintf(`{tcp: "%s"}`, l.Addr()))
	var ie *InfraError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "port "+l.Addr().String()+" (ready.tcp) is already in use by another process") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join("out", "run", DepsDir, "dep.stdout")); err == nil {
		t.Error("the dependency was started")
	}
}

// TestADependencyThatExitsZeroSaysSo: a dependency that ends with exit
// status 0 before it is ready is reported with that status, never with a
// "<nil>" in place of it.
func TestADependencyThatExitsZeroSaysSo(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(depReadyScenario, self, `{tcp: "127.0.0.1:{port:dep}"}`)
	dep := "      argv: [" + self + "]\n      env: {RUNNER_TEST_SERVE: \"127.0.0.1:{port:dep}\"}\n"
	if !strings.Contains(text, dep) {
		t.Fatal("the scenario has no dependency command to replace")
	}
	sc, err := plan.Parse("dep-exits.yaml", []byte(strings.Replace(text, dep, "      argv: [sh, -c, \"exit 0\"]\n", 1)), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	_, err = Run(context.Background(), sc, Options{Dir: filepath.Join("out", "run"), Self: "unused"})
	if err == nil || !strings.Contains(err.Error(), "dependency dep exited before it was ready (exit status 0)") || strings.Contains(err.Error(), "<nil>") {
		t.Fatalf("err = %v, want the dependency's exit status 0", err)
	}
}
