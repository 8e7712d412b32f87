package runner

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a target service chaoskit started and must stop.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited
	err    error         // exit error, valid after done
	stderr *tailBuffer
	lines  chan string // stdout lines, closed at EOF
	wg     sync.WaitGroup
}

// startProcess starts argv in its own process group with env added to the
// current environment. Its stdout and stderr are copied to the files
// stdoutPath and stderrPath; stdout lines are also sent on lines() until the
// caller stops reading (lines are never blocking the child). The child is
// killed by the kernel if chaoskit dies without stopping it (kill -9), so a
// killed run leaves no orphan service behind.
func startProcess(argv, env []string, dir, stdoutPath, stderrPath string) (*process, error) {
	outFile, err := os.Create(stdoutPath)
	if err != nil {
		return nil, err
	}
	errFile, err := os.Create(stderrPath)
	if err != nil {
		outFile.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		outFile.Close()
		errFile.Close()
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{}), stderr: &tailBuffer{max: 4096}, lines: make(chan string, 64)}
	cmd.Stderr = io.MultiWriter(errFile, p.stderr)
	if err := cmd.Start(); err != nil {
		outFile.Close()
		errFile.Close()
		return nil, err
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(outFile, line)
			select {
			case p.lines <- line:
			default: // nobody is listening any more; the file keeps it
			}
		}
	}()
	go func() {
		p.wg.Wait() // stdout fully read before Wait closes the pipe
		p.err = cmd.Wait()
		outFile.Close()
		errFile.Close()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitDescription says how the process ended, with the tail of its stderr.
func (p *process) exitDescription() string {
	msg := "exited"
	if p.err != nil {
		msg = p.err.Error()
	} else if p.cmd.ProcessState != nil {
		msg = p.cmd.ProcessState.String()
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

// stop ends the process group: SIGTERM, then SIGKILL after grace. It
// reports whether SIGKILL was needed.
func (p *process) stop(grace time.Duration) (killed bool) {
	pgid := -p.cmd.Process.Pid
	if !p.exited() {
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-t.C:
			killed = true
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			<-p.done
		}
	}
	// Children of the target that outlived it go too.
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	return killed
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
