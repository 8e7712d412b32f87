package testserver

import (
	"context"
	"os"
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
