package runner

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/inject"
)

// processAlive says whether pid is a live process (a zombie is dead).
func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for processAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if processAlive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("process %d outlived its supervisor", pid)
	}
}

// grandchild starts script as a target, which must print the pid of a
// process it started and then "ready", and returns both.
func grandchild(t *testing.T, script string) (*process, int) {
	t.Helper()
	dir := t.TempDir()
	p, err := startProcess([]string{"/bin/sh", "-c", script}, nil, "", filepath.Join(dir, "out"), filepath.Join(dir, "err"))
	if err != nil {
		t.Fatal(err)
	}
	pidLine, err := p.waitLine(context.Background(), "pid ", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(pidLine)
	if _, err := p.waitLine(context.Background(), "ready", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !processAlive(pid) {
		t.Fatalf("grandchild %d is not running", pid)
	}
	return p, pid
}

func TestSupervisorKillsEveryDescendant(t *testing.T) {
	if !p0Subreaper(t) {
		t.Skip("the kernel refuses PR_SET_CHILD_SUBREAPER")
	}
	// A grandchild that left the target's process group and session
	// (setsid), as a daemon does: the target exits, the grandchild must
	// go with it.
	t.Run("the target exits", func(t *testing.T) {
		p, pid := grandchild(t, `setsid sleep 60 & echo "pid $!"; echo ready; sleep 1; exit 3`)
		<-p.done
		if d := p.exitDescription(); !strings.HasPrefix(d, "exit status 3") {
			t.Errorf("exit %q, want the target's status", d)
		}
		waitGone(t, pid)
	})
	// chaoskit dies: its end of the control pipe closes, as the kernel
	// closes it for a process killed with SIGKILL.
	t.Run("chaoskit dies", func(t *testing.T) {
		p, pid := grandchild(t, `setsid sleep 60 & echo "pid $!"; echo ready; wait`)
		p.ctl.Close()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			t.Fatal("the supervisor did not end")
		}
		waitGone(t, pid)
		waitGone(t, p.pid())
	})
	// Stopped after its grace, the tree is killed.
	t.Run("stop escalates", func(t *testing.T) {
		p, pid := grandchild(t, `trap "" TERM; setsid sleep 60 & echo "pid $!"; echo ready; while :; do sleep 0.05; done`)
		if killed := p.stop(200 * time.Millisecond); !killed {
			t.Error("a target that ignores SIGTERM was not killed")
		}
		waitGone(t, pid)
	})
}

// p0Subreaper says whether this kernel lets a process be a child subreaper.
func p0Subreaper(t *testing.T) bool {
	dir := t.TempDir()
	p, err := startProcess([]string{"/bin/true"}, nil, "", filepath.Join(dir, "out"), filepath.Join(dir, "err"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.done
	return p.subreaper
}

func TestSupervisorDoesNotServeTheTargetsFailpoints(t *testing.T) {
	// The target's control endpoint is the target's: a chaoskit binary
	// (this test binary links pingcap/failpoint and inject) that saw
	// GO_FAILPOINTS_HTTP or CHAOSKIT_FAILPOINTS_HTTP would serve the control
	// endpoint itself, and faults would go to the supervisor.
	for _, name := range []string{"GO_FAILPOINTS_HTTP", inject.ControlEnv} {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		dir := t.TempDir()
		p, err := startProcess([]string{"/bin/sh", "-c", `echo "ready $` + name + `"; sleep 30`}, []string{name + "=" + addr, inject.TokenEnv + "=t"}, "", filepath.Join(dir, "out"), filepath.Join(dir, "err"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.waitLine(context.Background(), "ready ", 5*time.Second)
		if err != nil || got != addr {
			p.stop(time.Second)
			t.Fatalf("the target saw %s=%q (%v), want %s", name, got, err, addr)
		}
		time.Sleep(100 * time.Millisecond)
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("something serves %s: the supervisor took the target's control endpoint", addr)
		}
		p.stop(time.Second)
	}
}

func TestStartProcessReportsAMissingProgram(t *testing.T) {
	dir := t.TempDir()
	_, err := startProcess([]string{filepath.Join(dir, "no-such-server")}, nil, "", filepath.Join(dir, "out"), filepath.Join(dir, "err"))
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("start of a missing program: %v", err)
	}
}
