package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// faultRecord is the content of FaultRecord: every fault the run enabled,
// and those that may still be on. It is rewritten before each fault is
// switched on, so a run killed at any moment can be rolled back.
type faultRecord struct {
	Control string `json:"control"`
	// Points are the failpoints that may still be on.
	Points []string `json:"points"`
	// Enabled lists every fault the run switched on, in order.
	Enabled []enabledFault `json:"enabled,omitempty"`
	// Dir is the run directory (in the pending index only).
	Dir string `json:"dir,omitempty"`
}

type enabledFault struct {
	Phase string    `json:"phase"`
	Point string    `json:"point"`
	Term  string    `json:"term"`
	At    time.Time `json:"at"`
}

// retry is how hard chaoskit tries to reach the control endpoint: an
// endpoint that hiccups must neither fail a run nor leave a fault behind.
type retry struct {
	attempts int
	wait     time.Duration // before the second attempt; doubles each time
	timeout  time.Duration // per attempt
	sleep    func(context.Context, time.Duration) error
}

var (
	enableRetry  = retry{attempts: 3, wait: 20 * time.Millisecond, timeout: 2 * time.Second, sleep: sleepCtx}
	disableRetry = retry{attempts: 6, wait: 50 * time.Millisecond, timeout: 2 * time.Second, sleep: sleepCtx}
)

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs op until it succeeds, fails with an error other than
// inject.ErrUnreachable, or the attempts run out.
func (rt retry) do(ctx context.Context, op func(context.Context) error) error {
	var err error
	wait := rt.wait
	for i := 0; i < rt.attempts; i++ {
		if i > 0 {
			if e := rt.sleep(ctx, wait); e != nil {
				return err
			}
			wait *= 2
		}
		actx, cancel := context.WithTimeout(ctx, rt.timeout)
		err = op(actx)
		cancel()
		if err == nil || !errors.Is(err, inject.ErrUnreachable) {
			return err
		}
	}
	return err
}

// faults tracks what the run switched on; it is safe for concurrent use.
type faults struct {
	mu  sync.Mutex
	run *run
	// on holds the failpoints switched on (or being switched on) and not
	// yet confirmed off; expected those the running phase may switch on.
	// The record lists both.
	on       map[string]bool
	expected map[string]bool
	rec      faultRecord
	pending  string // this run's file in the pending index, if any
	// switched holds the last fault switched on at each path, so that
	// switching it off knows its source; rollingBack is set while the
	// run's end rolls back, when a process taken down stays down.
	switched    map[string]plan.Fault
	marker      map[string]bool // paths of failpoints (fault.Source.Marker)
	rollingBack bool
}

// switchOff switches the fault at path off through its source's
// actuator; a path this run did not switch on is a failpoint.
func (fs *faults) switchOff(phase, path string) error {
	fs.mu.Lock()
	f, ok := fs.switched[path]
	rollingBack := fs.rollingBack
	fs.mu.Unlock()
	if !ok {
		f = plan.Fault{Path: path}
	}
	s := f.Spec()
	s.Phase = phase
	return fs.run.actuator(f).Off(s, rollingBack)
}

// expect records, before a phase starts, every failpoint the phase may
// switch on, so that the record is on disk before any of them is enabled
// and writing it costs the acknowledgement times nothing. Rollback only
// disables what the endpoint lists as on, so recording early is harmless.
func (fs *faults) expect(list []plan.Fault) error {
	if len(list) == 0 {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.expected == nil {
		fs.expected = map[string]bool{}
	}
	if fs.marker == nil {
		fs.marker = map[string]bool{}
	}
	for _, f := range list {
		fs.expected[f.Path] = true
		fs.marker[f.Path] = f.Source().Marker
	}
	if err := fs.saveLocked(); err != nil {
		return infra("cannot record the faults about to be enabled", "check that the run directory is writable", err)
	}
	return nil
}

// enable switches the faults on at once, in parallel, each acknowledged
// against planned: the moment it was due. They must have been recorded
// with expect. It returns the longest acknowledgement delay. Its requests
// are not cut short by the run stopping (see run.controlCtx): a fault
// half switched on must be known on or off.
func (fs *faults) enable(phase string, planned time.Time, list []plan.Fault) (time.Duration, error) {
	if len(list) == 0 {
		return 0, nil
	}
	r := fs.run
	fs.mu.Lock()
	for _, f := range list {
		if !fs.expected[f.Path] {
			fs.mu.Unlock()
			panic("runner: fault " + f.Path + " enabled without being recorded first")
		}
		fs.on[f.Path] = true
		if fs.switched == nil {
			fs.switched = map[string]plan.Fault{}
		}
		fs.switched[f.Path] = f
		fs.rec.Enabled = append(fs.rec.Enabled, enabledFault{Phase: phase, Point: f.Path, Term: f.Term, At: planned})
	}
	fs.mu.Unlock()
	errs := make([]error, len(list))
	acks := make([]time.Duration, len(list))
	var wg sync.WaitGroup
	defer func() {
		fs.mu.Lock()
		_ = fs.saveLocked()
		fs.mu.Unlock()
	}()
	for i, f := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			act := r.actuator(f)
			s := f.Spec()
			s.Phase = phase
			err := act.On(s)
			ack := time.Now()
			if err != nil {
				errs[i] = err
				return
			}
			acks[i] = ack.Sub(planned)
			e := timeline.Event{Time: ack, Kind: timeline.FaultOn, Phase: phase, Point: f.Path, Term: f.Term, Ack: acks[i]}
			if !f.Source().Marker {
				e.Message = f.Term
			}
			r.event(e)
			if act.BackAtOnce(f.Spec()) {
				// Down and up again at once: the fault is off once the
				// process is ready.
				errs[i] = fs.disable(phase, ack, []string{f.Path}, "")
			}
		}()
	}
	wg.Wait()
	longest := slices.Max(acks)
	for _, err := range errs {
		if err == nil {
			continue
		}
		var ie *InfraError
		if errors.As(err, &ie) {
			return longest, err
		}
		if errors.Is(err, inject.ErrUnreachable) {
			return longest, infra("the failpoint control endpoint "+r.tgt.controlAddr+" is unreachable", "check that the service is up and serves the endpoint: a service chaoskit starts does when it imports github.com/chaoskit/chaoskit/inject (which reads CHAOSKIT_FAILPOINTS_HTTP); target.failpoints is the address of one chaoskit does not start", err)
		}
		if errors.Is(err, inject.ErrUnauthorized) {
			return longest, r.tgt.refusedToken(err)
		}
		return longest, infra("the control endpoint refused a fault", "check the fault's action and value (or the raw term), and that the service uses pingcap/failpoint's control endpoint", err)
	}
	return longest, nil
}

// disable switches the failpoints off, in parallel, with retries; planned
// is the moment they were due off. Like enable, it has the run's control
// budget once the run stops.
func (fs *faults) disable(phase string, planned time.Time, paths []string, message string) error {
	r := fs.run
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fs.switchOff(phase, path)
			ack := time.Now()
			if err != nil {
				errs[i] = err
				if len(paths) > 1 {
					errs[i] = fmt.Errorf("%s: %w", path, err)
				}
				return
			}
			fs.mu.Lock()
			delete(fs.on, path)
			fs.mu.Unlock()
			r.event(timeline.Event{Time: ack, Kind: timeline.FaultOff, Phase: phase, Point: path, Ack: ack.Sub(planned), Message: message})
		}()
	}
	wg.Wait()
	fs.mu.Lock()
	_ = fs.saveLocked()
	fs.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fs.mayBeOnError(err)
	}
	return nil
}

// mayBeOnError is the error of faults that could not be switched off: it
// names those that may still be on and the command that switches them off.
func (fs *faults) mayBeOnError(err error) error {
	r := fs.run
	fs.mu.Lock()
	points := slices.Clone(fs.rec.Points)
	fs.mu.Unlock()
	return infra(fmt.Sprintf("faults may still be on at %s: %s", r.tgt.controlAddr, strings.Join(points, ", ")),
		"switch them off with `chaoskit rollback "+r.dir+"` once the endpoint answers", err)
}

// phaseOver drops the expectations of a phase that has ended.
func (fs *faults) phaseOver() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.expected) > 0 {
		fs.expected = nil
		_ = fs.saveLocked()
	}
}

// forget drops a failpoint that went away with its service.
func (fs *faults) forget(path string) {
	fs.mu.Lock()
	delete(fs.on, path)
	_ = fs.saveLocked()
	fs.mu.Unlock()
}

// stillOn returns the failpoints that may still be on.
func (fs *faults) stillOn() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]string, 0, len(fs.on))
	for p := range fs.on {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// rollback switches off every fault still on. The run's entry in the
// pending index goes once nothing is left on. Once the run is interrupted
// it has what is left of the run's control budget (see Run), so a hanging
// endpoint cannot hold chaoskit.
// rolledBack is the message of the fault_off events of a rollback.
const rolledBack = "rolled back"

func (fs *faults) rollback() error {
	r := fs.run
	if r.tgt == nil {
		return nil
	}
	fs.mu.Lock()
	fs.rollingBack = true
	fs.mu.Unlock()
	var err error
	if on := fs.stillOn(); len(on) > 0 {
		err = fs.disable("", time.Now(), on, rolledBack)
	}
	fs.phaseOver()
	if err == nil {
		if fs.pending != "" {
			_ = os.Remove(fs.pending)
		}
		unfinished.forget(fs)
	}
	return err
}

// saveLocked writes the fault record to the run directory and, when the
// run has a state directory, to the pending index under the endpoint's
// name, so the next run against the same endpoint can undo a killed one.
func (fs *faults) saveLocked() error {
	r := fs.run
	fs.rec.Control = r.tgt.controlAddr
	// Only failpoints go in the record: a proxy dies with chaoskit, and a
	// dependency with its supervisor.
	fs.rec.Points = fs.rec.Points[:0]
	for p := range fs.on {
		if fs.marker[p] {
			fs.rec.Points = append(fs.rec.Points, p)
		}
	}
	for p := range fs.expected {
		if !fs.on[p] && fs.marker[p] {
			fs.rec.Points = append(fs.rec.Points, p)
		}
	}
	sort.Strings(fs.rec.Points)
	unfinished.note(fs, Unfinished{Dir: r.dir, Control: fs.rec.Control, Points: slices.Clone(fs.rec.Points)})
	if err := writeJSON(filepath.Join(r.dir, FaultRecord), fs.rec); err != nil {
		return err
	}
	if r.opts.StateDir == "" || fs.rec.Control == "" {
		return nil
	}
	if fs.pending == "" {
		if err := os.MkdirAll(r.opts.StateDir, 0o755); err != nil {
			return nil // the run directory's record is enough to roll back by hand
		}
		fs.pending = pendingFile(r.opts.StateDir, fs.rec.Control)
	}
	rec := fs.rec
	rec.Enabled = nil
	if abs, err := filepath.Abs(r.dir); err == nil {
		rec.Dir = abs
	}
	_ = writeJSON(fs.pending, rec)
	return nil
}

// pendingFile names the pending-index entry of a control endpoint.
func pendingFile(stateDir, control string) string {
	sum := sha256.Sum256([]byte(control))
	return filepath.Join(stateDir, "pending-"+hex.EncodeToString(sum[:8])+".json")
}

// writeJSON writes v to path whole or not at all, synced (see
// outdir.WriteFile): a fault record is either the old one or the new one,
// and true either way, since a point goes in before it is switched on and
// out only after it is confirmed off.
func writeJSON(path string, v any) error { return outdir.WriteJSON(path, v) }

// Unfinished is a run whose faults may still be on: chaoskit could not yet
// confirm them off.
type Unfinished struct {
	// Dir is the run directory, the argument of `chaoskit rollback`.
	Dir     string
	Control string
	Points  []string
}

// unfinishedRuns indexes the runs of this process whose fault records
// list points, so that a second Ctrl-C, which exits at once, can still say
// what may be on.
type unfinishedRuns struct {
	mu   sync.Mutex
	runs map[*faults]Unfinished
}

var unfinished unfinishedRuns

func (u *unfinishedRuns) note(fs *faults, run Unfinished) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(run.Points) == 0 || run.Control == "" {
		delete(u.runs, fs)
		return
	}
	if u.runs == nil {
		u.runs = map[*faults]Unfinished{}
	}
	u.runs[fs] = run
}

func (u *unfinishedRuns) forget(fs *faults) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.runs, fs)
}

// UnfinishedRuns returns the runs of this process whose faults may still
// be on, by run directory. It is safe to call from a signal handler's
// goroutine at any moment.
func UnfinishedRuns() []Unfinished {
	unfinished.mu.Lock()
	defer unfinished.mu.Unlock()
	out := make([]Unfinished, 0, len(unfinished.runs))
	for _, r := range unfinished.runs {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Unfinished) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}

// step is one fault switched on or off at an offset into its phase.
type step struct {
	at     time.Duration
	on     bool
	faults []plan.Fault
}

// schedule turns a phase's faults into the steps that switch them, in
// time order; faults due at the same moment share a step. Faults on until
// the phase ends get no off step: the phase's end switches them off.
func schedule(p *plan.Phase) []step {
	byTime := map[time.Duration]map[bool][]plan.Fault{}
	for _, f := range p.Faults {
		on, off := f.Window(p.Duration.D())
		add := func(at time.Duration, isOn bool) {
			if byTime[at] == nil {
				byTime[at] = map[bool][]plan.Fault{}
			}
			byTime[at][isOn] = append(byTime[at][isOn], f)
		}
		add(on, true)
		if off < p.Duration.D() {
			add(off, false)
		}
	}
	times := make([]time.Duration, 0, len(byTime))
	for t := range byTime {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var out []step
	for _, t := range times {
		// Off before on, so a point switched off and on again at one moment
		// ends up on.
		if fs := byTime[t][false]; len(fs) > 0 {
			out = append(out, step{at: t, on: false, faults: fs})
		}
		if fs := byTime[t][true]; len(fs) > 0 {
			out = append(out, step{at: t, on: true, faults: fs})
		}
	}
	return out
}

// lanes splits the steps into the lanes that switch independently, each
// in time order: a lane's step waits for the one before it, never for
// another lane's. A process fault's end can take long (a killed process is
// restarted and waited for until it is ready), and a fault due meanwhile on
// something else must still come on at its time. The target's process
// faults and the failpoints, which live in the target and answer only
// while it runs, share one lane; each proxy and each dependency's process
// has its own.
func lanes(steps []step) [][]step {
	index := map[string]int{}
	var out [][]step
	for _, st := range steps {
		split := map[int][]plan.Fault{}
		var order []int
		for _, f := range st.faults {
			key := f.Path
			if f.Source().Marker || f.Process == plan.TargetProcess {
				key = plan.TargetProcess
			}
			i, ok := index[key]
			if !ok {
				i = len(out)
				index[key] = i
				out = append(out, nil)
			}
			if _, ok := split[i]; !ok {
				order = append(order, i)
			}
			split[i] = append(split[i], f)
		}
		for _, i := range order {
			out[i] = append(out[i], step{at: st.at, on: st.on, faults: split[i]})
		}
	}
	return out
}
