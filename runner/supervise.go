package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/inject"
)

// A target chaoskit starts runs below a supervisor: the chaoskit
// executable itself, started again with supervisorEnv set, whose only
// child is the target. The supervisor makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER, Linux 3.4), so every process the target starts
// that loses its parent (a grandchild of `sh -c "./svc; echo done"`, a
// daemon that double-forks) is re-parented to it rather than to init. When
// the target exits, or when chaoskit dies in any way, even kill -9 (the
// supervisor sees the pipe chaoskit holds close, which the kernel does for
// a dead process), it kills every process below it and waits for them.
//
// It works without privileges: a PID namespace (whose init's death kills
// the namespace) or a delegated cgroup v2 (cgroup.kill) would need root or
// user namespaces, which users may not have. If the kernel refuses the
// subreaper, the supervisor still kills the target's descendants it can
// see when chaoskit dies, but a process that left the tree before is not
// found; the runner says so in its log.
//
// The protocol, over two pipes: chaoskit writes the target's argv and
// environment as one JSON line on the supervisor's fd 3 and keeps it
// open; the supervisor answers on fd 4 "pid N" (or "nosubreaper pid N", or
// "error MESSAGE"), and "exit STATUS" (a raw wait status) when the target
// has exited and its descendants are gone. EOF on fd 3 means "kill
// everything now".
const supervisorEnv = "CHAOSKIT_SUPERVISOR"

// supervisorSpec is what chaoskit tells the supervisor to start. It goes
// over the pipe, not in the supervisor's environment: a chaoskit binary
// with GO_FAILPOINTS_HTTP or CHAOSKIT_FAILPOINTS_HTTP set would serve
// failpoints itself, and the token stays off its environment.
type supervisorSpec struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	// Uid and Gid, when set, are the user and group the target runs as
	// (a dependency's run_as; the supervisor is root then).
	Uid *uint32 `json:"uid,omitempty"`
	Gid *uint32 `json:"gid,omitempty"`
	// StopSignal, when set, is sent to the target's process group when
	// chaoskit dies, and the target gets StopGrace to exit before every
	// process below the supervisor is killed: Postgres releases its
	// shared memory only when it stops by its own signal.
	StopSignal syscall.Signal `json:"stop_signal,omitempty"`
	StopGrace  time.Duration  `json:"stop_grace,omitempty"`
}

// killNow is the line chaoskit writes on the control pipe before closing
// it when it wants the target killed at once (it has waited for the stop
// signal already); EOF without it means chaoskit died.
const killNow = "kill"

// maxStopGrace bounds the wait for a target's own stop after chaoskit
// died.
const maxStopGrace = 10 * time.Second

// Any binary that links package runner (chaoskit, and the test binaries
// of the packages that start targets) becomes a supervisor when started
// as one, before main runs.
func init() {
	if os.Getenv(supervisorEnv) == "" {
		return
	}
	os.Exit(supervise())
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// supervise is the supervisor's main: it starts the target and ends when
// the target and all its descendants are gone.
func supervise() int {
	// The target must not inherit the pipes: chaoskit's end of fd 4 would
	// stay open in it.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	ctl := os.NewFile(3, "chaoskit")
	report := os.NewFile(4, "report")
	// The target's parent-death signal is tied to the thread that forks
	// it: keep that thread for the supervisor's whole life.
	runtime.LockOSThread()
	var spec supervisorSpec
	br := bufio.NewReader(ctl)
	line, err := br.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &spec)
	}
	if err == nil && len(spec.Argv) == 0 {
		err = fmt.Errorf("no target given")
	}
	if err != nil {
		fmt.Fprintf(report, "error reading what to start: %v\n", err)
		return 2
	}
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	argv0 := spec.Argv[0]
	if !strings.Contains(argv0, "/") {
		if p, err := exec.LookPath(argv0); err == nil {
			argv0 = p
		}
	}
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if spec.Uid != nil && spec.Gid != nil {
		sys.Credential = &syscall.Credential{Uid: *spec.Uid, Gid: *spec.Gid}
	}
	pid, err := syscall.ForkExec(argv0, spec.Argv, &syscall.ProcAttr{Env: spec.Env, Files: []uintptr{0, 1, 2}, Sys: sys})
	if err != nil {
		fmt.Fprintf(report, "error %v\n", err)
		return 127
	}
	if errno != 0 {
		fmt.Fprintf(report, "nosubreaper ")
	}
	fmt.Fprintf(report, "pid %d\n", pid)

	gone := make(chan bool, 1) // true: chaoskit asked for the kill
	go func() {
		l, _ := br.ReadString('\n')
		asked := strings.TrimSpace(l) == killNow
		_, _ = io.Copy(io.Discard, br)
		gone <- asked
	}()
	self := os.Getpid()
	for {
		select {
		case asked := <-gone:
			if !asked && spec.StopSignal != 0 {
				stopFirst(pid, spec.StopSignal, min(spec.StopGrace, maxStopGrace), sigs)
			}
			killTree(self, pid)
			return 137
		case s := <-sigs:
			if s != syscall.SIGCHLD {
				// Passed on: the target decides how to stop.
				_ = syscall.Kill(-pid, syscall.SIGTERM)
				continue
			}
			if ws, exited := reap(pid); exited {
				killTree(self, pid)
				fmt.Fprintf(report, "exit %d\n", uint32(ws))
				return 0
			}
		}
	}
}

// stopFirst sends sig to the target's process group and waits up to
// grace for the target to exit.
func stopFirst(target int, sig syscall.Signal, grace time.Duration, sigs <-chan os.Signal) {
	_ = syscall.Kill(-target, sig)
	_ = syscall.Kill(-target, syscall.SIGCONT)
	t := time.NewTimer(grace)
	defer t.Stop()
	for {
		if _, exited := reap(target); exited {
			return
		}
		select {
		case <-t.C:
			return
		case <-sigs:
		}
	}
}

// reap collects every child that has exited and reports whether target
// was one of them, with its status.
func reap(target int) (status syscall.WaitStatus, exited bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return status, exited
		}
		if pid == target {
			status, exited = ws, true
		}
	}
}

// killTree kills every process below self and waits until none is left:
// a process forked while the others die is re-parented to the subreaper
// and found on the next round. The target's process group goes first, for
// the processes that left the tree where the kernel refused the subreaper.
func killTree(self, target int) {
	_ = syscall.Kill(-target, syscall.SIGKILL)
	for {
		for _, p := range descendants(self) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.ECHILD {
			return
		}
	}
}

// descendants lists the processes below pid, from the parent of each
// process in /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads the parent of pid from /proc/PID/stat, whose second field
// (the command, in parentheses) may itself hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// describeStatus says how a process ended, as os.ProcessState does.
func describeStatus(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s := "signal: " + ws.Signal().String()
		if ws.CoreDump() {
			s += " (core dumped)"
		}
		return s
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// supervisorEnvFor is the supervisor's own environment: chaoskit's,
// without the failpoint variables a chaoskit binary would act on, and
// with supervisorEnv set.
func supervisorEnvFor() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "GO_FAILPOINTS" || name == "GO_FAILPOINTS_HTTP" || name == inject.ControlEnv || name == inject.TokenEnv || name == supervisorEnv {
			continue
		}
		env = append(env, kv)
	}
	return append(env, supervisorEnv+"=1")
}
