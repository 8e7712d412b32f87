// Package testserver starts real database servers for tests: PostgreSQL
// (initdb and postgres from Debian's postgresql package) and Redis
// (redis-server), each on a free loopback port with its data in the test's
// temporary directory, and stops them when the test ends. Nothing assumes
// a server already runs.
//
// A server runs in a process group of its own and is killed with the test
// binary (Pdeathsig), so none outlives the test. Kill and Start let a test
// take a server away and bring it back on the same port with the same data,
// which is how the tests of fallbacks and reconnects fail a dependency.
//
// When a binary is missing the test is skipped, except under CI (the CI
// environment variable set), where it fails: CI installs the packages, so a
// missing one there is a broken setup, not a reason to pass.
package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartTimeout bounds how long a server may take to accept connections.
const StartTimeout = 30 * time.Second

// stopTimeout is how long a graceful stop may take before the group is
// killed.
const stopTimeout = 10 * time.Second

// Server is one running (or stopped) server process.
type Server struct {
	t     testing.TB
	name  string // "redis" or "postgres", for messages
	port  int
	argv  func(port int) []string
	creds *syscall.Credential // nil: run as the test's own user
	dir   string              // working directory of the process
	ready func(ctx context.Context, addr string) error
	// stopSignal asks the server to shut down cleanly.
	stopSignal syscall.Signal

	mu     sync.Mutex
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{} // closed when cmd has been waited for
}

// Addr returns the server's address, 127.0.0.1:PORT. It stays the same
// across Kill and Start.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// Output returns the last lines the server printed, for a failure message.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// start runs the server on s.port and waits until it accepts connections.
// A port taken meanwhile by another process is retried on a fresh port
// when retryPort is set (first start only: a restart keeps its address).
func (s *Server) start(retryPort bool) {
	s.t.Helper()
	const attempts = 3
	for i := 1; ; i++ {
		err := s.launch()
		if err == nil {
			return
		}
		if retryPort && i < attempts && strings.Contains(s.Output(), "in use") {
			s.port = freePort(s.t)
			continue
		}
		s.t.Fatalf("testserver: %s on %s did not start: %v\nlast output:\n%s", s.name, s.Addr(), err, s.Output())
	}
}

func (s *Server) launch() error {
	argv := s.argv(s.port)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir
	out := newTail(40)
	cmd.Stdout, cmd.Stderr = out, out
	// Setpgid: the server and its children (postgres backends) form one
	// group, killed together. Pdeathsig: the server dies with the test
	// binary, even when the binary is killed and no cleanup runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.creds}
	// A straggler holding the output pipe must not keep Wait from
	// returning once the server has exited.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.out, s.exited = cmd, out, exited
	s.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	for {
		attempt, stop := context.WithTimeout(ctx, time.Second)
		err := s.ready(attempt, s.Addr())
		stop()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited (%v) before accepting connections", cmd.ProcessState)
		case <-ctx.Done():
			s.killGroup()
			return fmt.Errorf("not ready after %v: %v", StartTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// running returns the server's process and the channel closed when it
// exits, or a nil command when it is not running.
func (s *Server) running() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return nil, nil
	}
	select {
	case <-exited:
		return nil, nil
	default:
		return cmd, exited
	}
}

// Kill kills the server and its children with SIGKILL, as a crash would,
// and returns once they are gone. Its data stays for Start.
func (s *Server) Kill() {
	s.t.Helper()
	s.killGroup()
}

func (s *Server) killGroup() {
	cmd, exited := s.running()
	if cmd == nil {
		return
	}
	// The leader is not reaped before exited closes, so its pid (the
	// group's id) cannot have been reused by another group.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill()
	}
	<-exited
}

// Stop shuts the server down cleanly (SIGKILL after 10 s) and returns
// once it is gone.
func (s *Server) Stop() {
	cmd, exited := s.running()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, s.stopSignal)
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		s.killGroup()
	}
}

// Start starts a stopped or killed server again on the same port with the
// same data and waits until it accepts connections. It fails the test if
// the server is still running or does not come back.
func (s *Server) Start() {
	s.t.Helper()
	if s.Running() {
		s.t.Fatalf("testserver: Start of %s on %s, which is running", s.name, s.Addr())
	}
	s.start(false)
}

// Restart kills the server and starts it again.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.Start()
}

// binary finds a server binary: the first of candidates that exists, or
// the name on PATH. Missing, it skips the test, or fails it under CI.
func binary(t testing.TB, name string, candidates ...string) string {
	t.Helper()
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("testserver: %s not found (install it: apt-get install %s)", name, debianPackage[name])
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI must have it")
	}
	t.Skip(msg)
	return ""
}

var debianPackage = map[string]string{"git": "git", "prometheus": "prometheus", "redis-server": "redis-server", "initdb": "postgresql", "postgres": "postgresql"}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tail keeps the last lines written to it, so a server's output stays
// bounded however long it runs.
type tail struct {
	mu    sync.Mutex
	max   int
	lines [][]byte
	part  []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.part = append(t.part, p...)
			if len(t.part) > 4096 {
				t.part = t.part[len(t.part)-4096:]
			}
			break
		}
		line := append(t.part, p[:i]...)
		t.part = nil
		t.lines = append(t.lines, line)
		if len(t.lines) > t.max {
			t.lines = t.lines[1:]
		}
		p = p[i+1:]
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, l := range t.lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	b.Write(t.part)
	return b.String()
}

// errNotReady is what a readiness check returns while the server is up but
// not yet answering.
var errNotReady = errors.New("not ready")
