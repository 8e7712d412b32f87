package runner

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

// managed is a process chaoskit started and may kill, pause and start
// again during the run: the target or a dependency. Its current process
// changes on each restart, always on the same ports with the same
// arguments; planned says whether the current one's exit is chaoskit's
// doing, so that a planned kill is not taken for a crash.
type managed struct {
	name string
	// start starts the process again and waits until it is ready.
	start func(ctx context.Context) (*process, error)
	// grace is how long SIGTERM is given before SIGKILL.
	grace time.Duration
	// stopSignal asks the process to stop (SIGTERM; SIGINT for Postgres).
	stopSignal syscall.Signal

	mu      sync.Mutex
	proc    *process
	planned bool
	paused  bool
	// swapped is closed, and replaced, whenever proc changes or its exit
	// becomes planned, so that a watcher waiting on the old one looks again.
	swapped chan struct{}
}

func newManaged(name string, p *process, grace time.Duration, start func(context.Context) (*process, error)) *managed {
	return &managed{name: name, proc: p, grace: grace, start: start, stopSignal: syscall.SIGTERM, swapped: make(chan struct{})}
}

// current returns the running (or last) process, whether its exit is
// planned, and the channel closed at the next change.
func (m *managed) current() (*process, bool, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc, m.planned, m.swapped
}

// changed signals the watchers; m.mu is held.
func (m *managed) changed() {
	close(m.swapped)
	m.swapped = make(chan struct{})
}

// kill ends the process with SIGKILL, as a crash would, and returns once it
// and everything it started are gone.
func (m *managed) kill() {
	p := m.plan()
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	t := time.NewTimer(supervisorGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.kill()
	}
}

// terminate asks the process to stop and kills it after its grace.
func (m *managed) terminate() stopped {
	return m.plan().stopTimed(m.stopSignal, m.grace)
}

// plan marks the end of the running process as planned (not a crash),
// continues it if it was paused, so that it can die, and returns it.
func (m *managed) plan() *process {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.planned = true
	m.continueLocked()
	m.changed()
	return m.proc
}

// pause stops the process group with SIGSTOP.
func (m *managed) pause() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc.exited() {
		return
	}
	_ = syscall.Kill(-m.proc.pid(), syscall.SIGSTOP)
	m.paused = true
}

// resume continues a paused process group; it does nothing otherwise.
func (m *managed) resume() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.continueLocked()
}

func (m *managed) continueLocked() {
	if m.paused {
		_ = syscall.Kill(-m.proc.pid(), syscall.SIGCONT)
		m.paused = false
	}
}

// restart starts the process again, once its last one is gone.
func (m *managed) restart(ctx context.Context) (*process, error) {
	m.mu.Lock()
	old := m.proc
	m.mu.Unlock()
	<-old.done
	p, err := m.start(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.proc, m.planned = p, false
	m.changed()
	m.mu.Unlock()
	return p, nil
}

// down says whether the process is not running now.
func (m *managed) down() bool {
	p, _, _ := m.current()
	return p.exited()
}

// processes returns the managed processes by the names process faults
// give them.
func (r *run) managedNamed(name string) *managed {
	if name == plan.TargetProcess {
		return r.tgtProc
	}
	for _, d := range r.deps {
		if d.name == name {
			return d.managed
		}
	}
	return nil
}

// actionOn carries out the start of a process fault: kill, terminate,
// pause, or (restart) terminate, which actionOff follows at once.
func (r *run) actionOn(process, action string) error {
	m := r.managedNamed(process)
	if m == nil {
		return infra("process fault on "+process+", which chaoskit did not start", "", nil)
	}
	p, _, _ := m.current()
	if p.exited() {
		return infra(fmt.Sprintf("cannot %s %s: it is not running (%s)", action, process, p.exitDescription()), "see its output in the run directory", nil)
	}
	data := map[string]any{"process": process, "pid": p.pid(), "action": action, "planned": true}
	switch action {
	case "kill":
		m.kill()
		r.event(processEvent("killed", data))
	case "terminate", "restart":
		st := m.terminate()
		r.event(processEvent("terminated", st.data(process, data)))
	case "pause":
		m.pause()
		r.event(processEvent("paused", data))
	}
	return nil
}

// actionOff ends a process fault: a paused process continues, a killed or
// terminated one is started again on the same ports and waited for until
// it is ready, so that the time to recover is measured from there.
func (r *run) actionOff(ctx context.Context, process, action string) error {
	m := r.managedNamed(process)
	if m == nil {
		return nil
	}
	if action == "pause" {
		m.resume()
		p, _, _ := m.current()
		r.event(processEvent("continued", map[string]any{"process": process, "pid": p.pid(), "planned": true}))
		return nil
	}
	if !m.down() {
		return nil
	}
	began := time.Now()
	p, err := m.restart(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return infra(fmt.Sprintf("%s did not come back after %s", process, action), "see its output in the run directory", err)
	}
	r.event(processEvent("restarted", map[string]any{"process": process, "pid": p.pid(), "ready_after_ns": time.Since(began), "planned": true}))
	return nil
}
