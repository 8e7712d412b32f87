package testserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillTakesTheWholeGroup runs a "server" whose child ignores its
// parent's death (a shell's background sleep), the case a kill of the
// leader alone would leave behind.
func TestKillTakesTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	s := &Server{
		t: t, name: "sh", port: freePort(t), dir: dir, stopSignal: syscall.SIGTERM,
		argv: func(int) []string {
			return []string{"/bin/sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"}
		},
		ready: func(context.Context, string) error {
			if b, err := os.ReadFile(pidFile); err != nil || !strings.HasSuffix(string(b), "\n") {
				return errNotReady
			}
			return nil
		},
	}
	t.Cleanup(s.Stop)
	s.start(false)
	b, _ := os.ReadFile(pidFile)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	s.Kill()
	deadline := time.Now().Add(time.Second)
	for syscall.Kill(child, 0) == nil && !zombie(child) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("child %d of a killed server still runs", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
}

// TestMissingBinarySkipsOrFailsUnderCI runs itself in a child process that
// looks for a server binary that does not exist: a skip on a developer's
// machine, a failure under CI.
func TestMissingBinarySkipsOrFailsUnderCI(t *testing.T) {
	if os.Getenv("TESTSERVER_CHILD") == "1" {
		binary(t, "chaoskit-no-such-server")
		t.Fatal("binary returned for a missing server")
	}
	for _, tt := range []struct {
		ci   string
		fail bool
		want string
	}{
		{"", false, "--- SKIP"},
		{"true", true, "CI must have it"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinarySkipsOrFailsUnderCI$", "-test.v")
		env := []string{"TESTSERVER_CHILD=1", "CI=" + tt.ci}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CI=") {
				env = append(env, kv)
			}
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if (err != nil) != tt.fail || !strings.Contains(string(out), tt.want) {
			t.Errorf("CI=%q: %v\n%s\nwant failure %v and %q", tt.ci, err, out, tt.fail, tt.want)
		}
	}
}
