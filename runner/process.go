package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/timeline"
)

// process is a target service chaoskit started and must stop, running
// below its supervisor (see supervisorEnv).
type process struct {
	cmd    *exec.Cmd // the supervisor
	target int       // the target's pid, also its process group
	// ctl is chaoskit's end of the supervisor's control pipe: closing it
	// kills the target and everything below it.
	ctl        *os.File
	ctlOnce    sync.Once
	subreaper  bool
	done       chan struct{} // closed when the target and its descendants are gone
	err        error         // how the target ended, valid after done
	stderr     *tailBuffer
	output     *tailBuffer // the last of stdout and stderr together
	lines      chan string // stdout lines, closed at EOF
	wg         sync.WaitGroup
	status     syscall.WaitStatus
	hasStatus  bool
	statusErr  error
	supervisor int
}

// supervisorStart bounds the wait for the supervisor to start the target;
// outputGrace the wait for the end of the target's output once the
// supervisor has exited.
const (
	supervisorStart = 10 * time.Second
	outputGrace     = 2 * time.Second
)

// startProcess starts argv in its own process group, below a supervisor
// (see supervisorEnv), with env added to the current environment. Its
// stdout and stderr are copied to the files stdoutPath and stderrPath;
// stdout lines are also sent on lines() until the caller stops reading
// (lines are never blocking the child). Whenever chaoskit dies, even by
// kill -9, the supervisor kills the target and every process below it, so
// a killed run leaves no orphan behind.
func startProcess(argv, env []string, dir, stdoutPath, stderrPath string) (*process, error) {
	return startProcessWith(argv, env, dir, stdoutPath, stderrPath, startOptions{})
}

// startOptions are the less common ways to start a process.
type startOptions struct {
	// Append adds the output to the files instead of replacing them: a
	// process started again keeps its first life's output.
	Append bool
	// Credential, when set, is the user the process runs as (chaoskit
	// must be root).
	Credential *syscall.Credential
	// StopSignal and StopGrace, when set, are how the supervisor stops
	// the process when chaoskit dies, before it kills what is left (see
	// supervisorSpec).
	StopSignal syscall.Signal
	StopGrace  time.Duration
}

// startProcessWith is startProcess with options.
func startProcessWith(argv, env []string, dir, stdoutPath, stderrPath string, opts startOptions) (*process, error) {
	// /proc/self/exe is the image this process runs, even when the file it
	// was started from has been rebuilt or removed since.
	self := "/proc/self/exe"
	if _, err := os.Stat(self); err != nil {
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("cannot find chaoskit's executable to supervise the target: %w", err)
		}
	}
	// O_NOFOLLOW: a link planted under an output's name makes the start
	// fail rather than write where it points.
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC | syscall.O_NOFOLLOW
	if opts.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND | syscall.O_NOFOLLOW
	}
	outFile, err := os.OpenFile(stdoutPath, flags, 0o644)
	if err != nil {
		return nil, err
	}
	errFile, err := os.OpenFile(stderrPath, flags, 0o644)
	if err != nil {
		outFile.Close()
		return nil, err
	}
	var toClose []io.Closer
	fail := func(err error) (*process, error) {
		for _, c := range toClose {
			c.Close()
		}
		outFile.Close()
		errFile.Close()
		return nil, err
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return fail(err)
	}
	toClose = append(toClose, ctlR, ctlW, repR, repW)
	// The output goes through pipes of chaoskit's own, read to their end
	// here: exec's would make Wait wait for every process holding them.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	toClose = append(toClose, outR, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	toClose = append(toClose, errR, errW)
	cmd := exec.Command(self)
	cmd.Args = []string{"chaoskit-supervisor"}
	cmd.Env = supervisorEnvFor()
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{ctlR, repW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &process{cmd: cmd, ctl: ctlW, done: make(chan struct{}), stderr: &tailBuffer{max: 4096}, output: &tailBuffer{max: 4096}, lines: make(chan string, 64)}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	p.supervisor = cmd.Process.Pid
	for _, f := range []*os.File{ctlR, repW, outW, errW} {
		f.Close()
	}
	ss := supervisorSpec{Argv: argv, Env: lastWins(append(inheritedEnv(), env...))}
	if c := opts.Credential; c != nil {
		ss.Uid, ss.Gid = &c.Uid, &c.Gid
	}
	ss.StopSignal, ss.StopGrace = opts.StopSignal, opts.StopGrace
	spec, _ := json.Marshal(ss)
	_, werr := ctlW.Write(append(spec, '\n'))
	reports := make(chan string, 2)
	go func() {
		defer close(reports)
		sc := bufio.NewScanner(repR)
		for sc.Scan() {
			reports <- sc.Text()
		}
		repR.Close()
	}()
	first, ok := "", false
	if werr == nil {
		select {
		case first, ok = <-reports:
		case <-time.After(supervisorStart):
		}
	}
	rest, found := strings.CutPrefix(first, "nosubreaper ")
	p.subreaper = !found
	pidText, isPid := strings.CutPrefix(rest, "pid ")
	target, perr := strconv.Atoi(pidText)
	if !ok || !isPid || perr != nil {
		ctlW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		outR.Close()
		errR.Close()
		outFile.Close()
		errFile.Close()
		msg := strings.TrimPrefix(first, "error ")
		if msg == "" {
			msg = fmt.Sprintf("the supervisor %s did not start it", self)
			if werr != nil {
				msg += ": " + werr.Error()
			}
		}
		return nil, fmt.Errorf("%s: %s", argv[0], msg)
	}
	p.target = target
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		_, _ = io.Copy(io.MultiWriter(errFile, p.stderr, p.output), errR)
	}()
	go func() {
		defer p.wg.Done()
		defer close(p.lines)
		readLines(outR, io.MultiWriter(outFile, p.output), func(line string) {
			select {
			case p.lines <- line:
			default: // nobody is listening any more; the file keeps it
			}
		})
	}()
	go func() {
		for r := range reports {
			if v, ok := strings.CutPrefix(r, "exit "); ok {
				if n, err := strconv.ParseUint(v, 10, 32); err == nil {
					p.status, p.hasStatus = syscall.WaitStatus(n), true
				}
			}
		}
		p.statusErr = cmd.Wait()
		p.ctlOnce.Do(func() { ctlW.Close() })
		// The output is read to its end, unless a process that escaped
		// the supervisor still holds it.
		read := make(chan struct{})
		go func() { p.wg.Wait(); close(read) }()
		select {
		case <-read:
		case <-time.After(outputGrace):
			outR.Close()
			errR.Close()
			<-read
		}
		outR.Close()
		errR.Close()
		switch {
		case p.hasStatus && !(p.status.Exited() && p.status.ExitStatus() == 0):
			p.err = errors.New(describeStatus(p.status))
		case !p.hasStatus:
			p.err = fmt.Errorf("its supervisor ended (%v)", p.statusErr)
		}
		outFile.Close()
		errFile.Close()
		close(p.done)
	}()
	return p, nil
}

// maxLine bounds how much of one stdout line readLines hands on; the
// rest of a longer line still goes to the file.
const maxLine = 64 << 10

// readLines copies r to w as it is, to its end, and calls line with each
// line (without its line ending; the first maxLine bytes of a longer
// one). A line of any length is read through a buffer of fixed size, so
// a program that prints megabytes without a newline neither stalls on a
// pipe nobody reads any more nor makes chaoskit hold it all.
func readLines(r io.Reader, w io.Writer, line func(string)) {
	br := bufio.NewReaderSize(r, 32<<10)
	var cur []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			_, _ = w.Write(chunk)
		}
		text := chunk
		if err == nil {
			text = chunk[:len(chunk)-1]
		}
		if room := maxLine - len(cur); room > 0 {
			cur = append(cur, text[:min(room, len(text))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil || len(cur) > 0 {
			line(strings.TrimSuffix(string(cur), "\r"))
		}
		cur = cur[:0]
		if err != nil {
			return
		}
	}
}

// pid returns the target's process id.
func (p *process) pid() int { return p.target }

// exited reports whether the target has ended (and everything it started).
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitDescription says how the target ended, with the tail of its stderr.
// endedWith says how the process ended: its error, or exit status 0
// (never "<nil>").
func (p *process) endedWith() string {
	if p.err != nil {
		return p.err.Error()
	}
	return "exit status 0"
}

func (p *process) exitDescription() string {
	msg := "exit status 0"
	if p.err != nil {
		msg = p.err.Error()
	}
	if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
		msg += ": " + lastLines(tail, 3)
	}
	return msg
}

// waitLine waits for a stdout line with the given prefix and returns the
// rest of it.
func (p *process) waitLine(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				<-p.done
				return "", fmt.Errorf("target exited before it was ready (%s)", p.exitDescription())
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return strings.TrimSpace(rest), nil
			}
		case <-t.C:
			return "", fmt.Errorf("target printed no %q line within %v", prefix, timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// supervisorGrace bounds the wait for the supervisor to kill the target's
// processes once told to; after it, chaoskit kills the supervisor and the
// target's process group itself.
const supervisorGrace = 5 * time.Second

// stop ends the target: SIGTERM to its process group, then, after grace,
// the supervisor kills it and everything below it. It reports whether
// killing was needed.
func (p *process) stop(grace time.Duration) (killed bool) {
	return p.stopWith(syscall.SIGTERM, grace)
}

// stopWith is stop with another signal than SIGTERM (Postgres stops at
// once on SIGINT). A stopped (paused) group is continued, so that it can
// act on the signal.
func (p *process) stopWith(sig syscall.Signal, grace time.Duration) (killed bool) {
	return p.stopTimed(sig, grace).killed
}

// stopped is how a process was stopped: when the signal was sent, how
// long the process took to be gone after it, and whether it had to be
// killed after its grace.
type stopped struct {
	sent   time.Time
	took   time.Duration
	grace  time.Duration
	killed bool
}

// data is the stop as a Process event records it (timeline.Stop).
func (s stopped) data(name string, m map[string]any) map[string]any {
	m[timeline.StopProcess] = name
	if s.sent.IsZero() {
		return m // already gone: no signal was sent
	}
	m[timeline.Signalled] = s.sent.UnixNano()
	m[timeline.StopTook] = int64(s.took)
	m[timeline.StopGrace] = int64(s.grace)
	if s.killed {
		m[timeline.KilledAfterGrace] = true
	}
	return m
}

// stopTimed is stopWith, timed; a process already gone gives a zero sent.
func (p *process) stopTimed(sig syscall.Signal, grace time.Duration) stopped {
	st := stopped{grace: grace}
	if p.exited() {
		return st
	}
	st.sent = time.Now()
	_ = syscall.Kill(-p.target, sig)
	_ = syscall.Kill(-p.target, syscall.SIGCONT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		st.took = time.Since(st.sent)
		return st
	case <-t.C:
	}
	p.kill()
	st.took, st.killed = time.Since(st.sent), true
	return st
}

// kill has the supervisor kill the target and every process below it, and
// waits until they are gone.
func (p *process) kill() {
	p.ctlOnce.Do(func() {
		_, _ = p.ctl.Write([]byte(killNow + "\n"))
		p.ctl.Close()
	})
	t := time.NewTimer(supervisorGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		_ = syscall.Kill(-p.target, syscall.SIGKILL)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// inheritedEnv is the part of chaoskit's environment a process it starts
// inherits: all of it but the variables that make a process serve a
// failpoint control endpoint (GO_FAILPOINTS_HTTP, CHAOSKIT_FAILPOINTS_HTTP).
// Exported in a user's shell for something else, they would have every
// target and dependency bind that address; a target gets them when the
// scenario asks, from the run (target.failpoints) or its command.env.
func inheritedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "GO_FAILPOINTS_HTTP" || name == inject.ControlEnv {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// lastWins keeps the last entry of each variable in env, as os/exec does: a
// program started with two entries of one name sees the first (Go's
// runtime does), and the scenario's entries, which come last, must win.
func lastWins(env []string) []string {
	at := map[string]int{}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := at[name]; ok {
			out[i] = kv
			continue
		}
		at[name] = len(out)
		out = append(out, kv)
	}
	return out
}
