// Package timeout bounds how long a call may take. The call runs with a
// context whose deadline is the call's start plus Settings.Timeout; when the
// deadline passes, the context is done, the work is expected to stop (every
// net/http, database/sql and gRPC call does), and the call's error becomes
// ErrTimeout. The work is cancelled, not abandoned: Execute waits for fn to
// return, so no goroutine is left running behind the caller's back, as
// hystrix-go leaves it.
//
// ErrTimeout matches context.DeadlineExceeded with errors.Is, so a circuit
// breaker counts it as a failure and a breakerimpl.Pipeline reports it with
// Reason "timeout".
//
// # Cost
//
// context.WithTimeout costs a clock read, a runtime timer and, with the
// Done channel the work waits on, five allocations per call (a microsecond
// or more in BenchmarkTimeout on a two-core machine). A Timeout instead
// gives the calls that start within Settings.Slack of each other one
// shared deadline and one timer, read from the coarse clock, so that a
// call costs no timer and one allocation, a context of three words (none
// when the parent is context.Background(): such calls share one). The
// deadline of each call is thus between Timeout and Timeout+Slack after
// its start.
//
// A call's context is done when its deadline passes or its parent is done,
// whichever comes first. When the parent can be cancelled, a call whose
// work waits on Done is registered with the parent and the shared deadline
// the first time it asks (a channel and a context.AfterFunc), and is
// cancelled when the call ends; work that never waits on the context pays
// nothing for that. Work must not use the context after the call returns:
// it ends then or at the deadline.
//
// # Modes
//
// The mode above, Cooperative, is the default: the caller gets its answer
// when the work returns, which is at the deadline only if the work heeds
// its context. Work that does not (a library call with no context, a busy
// loop, a cgo call) holds the caller as long as it runs. Mode Abandon
// answers at the deadline whatever the work does, as hystrix-go's timeout
// and resilience4j's TimeLimiter do: the work runs on a goroutine of its
// own; at the deadline the caller gets ErrTimeout and the work is
// abandoned (its context is done, its late result discarded). Abandoned
// calls still running are counted (Snapshot.Abandoned, a gauge) and
// bounded by Settings.MaxAbandoned: while that many run on, new calls are
// refused at once with ErrAbandonedFull, so that a dependency that hangs
// cannot pile up goroutines without end. An abandoned call costs a
// goroutine and its stack until the work returns; the mode costs a
// goroutine and a channel per call even when the work is quick.
package timeout

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// ErrTimeout is the error of a call that ran past its deadline. It matches
// context.DeadlineExceeded with errors.Is. Execute and End return it
// wrapped with the work's own error; test with errors.Is.
var ErrTimeout error = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "timeout: call ran past its deadline" }
func (timeoutError) Unwrap() error   { return context.DeadlineExceeded }
func (timeoutError) Timeout() bool   { return true } // as net.Error
func (timeoutError) Temporary() bool { return true }

// ErrAbandonedFull is the error of a call an Abandon-mode Timeout refused
// because Settings.MaxAbandoned abandoned calls still run. It matches
// breakerimpl.ErrRejected with errors.Is (Reason "rejected").
var ErrAbandonedFull error = abandonedFullError{}

type abandonedFullError struct{}

func (abandonedFullError) Error() string {
	return "timeout: call refused, too many abandoned calls still run"
}
func (abandonedFullError) Unwrap() error { return breakerimpl.ErrRejected }

// DefaultTimeout is the Timeout of Settings that leave it zero (hystrix's
// default).
const DefaultTimeout = time.Second

// DefaultMaxAbandoned is the MaxAbandoned of Settings that leave it zero.
const DefaultMaxAbandoned = 100

// Mode says what a Timeout does at a call's deadline.
type Mode uint8

const (
	// Cooperative ends the call's context at the deadline and waits for
	// the work to return: the caller is answered when the work heeds its
	// context. No goroutine is left behind.
	Cooperative Mode = iota
	// Abandon answers the caller at the deadline with ErrTimeout whatever
	// the work does; the work runs on, abandoned, its result discarded.
	Abandon
)

// String returns "cooperative" or "abandon".
func (m Mode) String() string {
	if m == Abandon {
		return "abandon"
	}
	return "cooperative"
}

// Settings configures a Timeout. The zero value bounds calls to
// DefaultTimeout.
//
// Name names the timeout in events and snapshots. It may be empty.
//
// Timeout is the time a call may take. Zero or less means DefaultTimeout.
//
// Slack is how late a deadline may come so that calls starting close
// together share one timer: a call's deadline is between Timeout and
// Timeout+Slack after its start. Zero means 1 % of Timeout, at least one
// millisecond (the resolution of the default clock); below zero means
// calls share a timer only when they start at the same clock reading.
//
// Mode is Cooperative (the zero value) or Abandon; see the package doc.
//
// MaxAbandoned bounds, in Abandon mode, the abandoned calls still running:
// while that many run on, a new call is refused at once with
// ErrAbandonedFull. Zero or less means DefaultMaxAbandoned.
//
// OnEvent is called when a call times out, on the caller's goroutine. Nil
// means no one is told.
//
// Clock is the time source. Nil means clock.Default(); tests pass a
// *clock.Fake.
type Settings struct {
	Name    string
	Timeout time.Duration
	Slack   time.Duration
	Mode    Mode
	// MaxAbandoned: see above.
	MaxAbandoned int
	OnEvent      func(Event)
	Clock        clock.Clock
}

// Event is published to Settings.OnEvent when a call times out.
type Event struct {
	Name     string
	Err      error // the error the work returned after its deadline
	Snapshot Snapshot
}

// String describes the event on one line, for logs and %v, as in
// "timeout recs: timeout: call ran past its deadline after 1s: read: EOF
// (3 timed out)".
func (e Event) String() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	return fmt.Sprintf("timeout%s: %v (%d timed out)", name, e.Err, e.Snapshot.TimedOut)
}

// Snapshot is the state of a Timeout, for metrics.
type Snapshot struct {
	Name     string
	Timeout  time.Duration
	TimedOut uint64 // calls that ran past their deadline, since creation
	Mode     Mode
	// Abandoned is the abandoned calls still running (Abandon mode), now.
	Abandoned int64
	// AbandonedTotal counts the calls abandoned since creation, and
	// AbandonRefused the calls refused with ErrAbandonedFull.
	AbandonedTotal, AbandonRefused uint64
}

// Timeout bounds calls. Make one with New; it is safe for concurrent use.
type Timeout struct {
	name      string
	d         atomic.Int64 // nanoseconds; SetTimeout changes it
	slack     atomic.Int64
	autoSlack bool // Settings.Slack was zero: the slack follows the timeout
	onEvent   func(Event)
	clock     clock.Clock
	mode      Mode
	maxAb     atomic.Int64

	abandoned      atomic.Int64
	abandonedTotal atomic.Uint64
	abandonRefused atomic.Uint64

	cur      atomic.Pointer[deadline] // the deadline new calls share
	mu       sync.Mutex               // serialises making deadlines
	timedOut atomic.Uint64
}

// New returns a Timeout with the given settings (see Settings for the
// defaults of zero fields).
func New(s Settings) *Timeout {
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	t := &Timeout{name: s.Name, onEvent: s.OnEvent, clock: s.Clock, mode: s.Mode, autoSlack: s.Slack == 0}
	if s.Slack > 0 {
		t.slack.Store(int64(s.Slack))
	}
	t.SetTimeout(s.Timeout)
	t.SetMaxAbandoned(s.MaxAbandoned)
	return t
}

// Timeout returns the time a call may take now (Settings.Timeout, or what
// SetTimeout set).
func (t *Timeout) Timeout() time.Duration { return time.Duration(t.d.Load()) }

// SetTimeout changes the time a call may take, for the calls that begin
// from now on; calls under way keep their deadline. Zero or less means
// DefaultTimeout. A Slack left zero in Settings follows the new timeout
// (1 % of it, at least a millisecond). Package reload calls it when a
// policy file changes.
func (t *Timeout) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultTimeout
	}
	if t.autoSlack {
		t.slack.Store(int64(max(d/100, time.Millisecond)))
	}
	t.d.Store(int64(d))
}

// MaxAbandoned returns the bound on abandoned calls in force.
func (t *Timeout) MaxAbandoned() int { return int(t.maxAb.Load()) }

// SetMaxAbandoned changes Settings.MaxAbandoned; zero or less means
// DefaultMaxAbandoned. Abandoned calls already over a lowered bound run
// on; new calls are refused until they are under it.
func (t *Timeout) SetMaxAbandoned(n int) {
	if n <= 0 {
		n = DefaultMaxAbandoned
	}
	t.maxAb.Store(int64(n))
}

// Begin starts a call: it returns the context the call runs with, which
// carries the call's deadline. End the call with End.
func (t *Timeout) Begin(ctx context.Context) context.Context {
	now := t.clock.Nanotime()
	at := now + t.d.Load()
	d := t.cur.Load()
	if d == nil || at > d.at || d.at-at > t.slack.Load() {
		d = t.deadlineFor(now, at)
	}
	if ctx == background {
		return d.background // nothing to tell apart calls of one deadline
	}
	return &callContext{Context: ctx, d: d}
}

var background = context.Background()

// deadlineFor returns a shared deadline between at and at+slack, making a
// new one if the current one is not.
func (t *Timeout) deadlineFor(now, at int64) *deadline {
	t.mu.Lock()
	defer t.mu.Unlock()
	slack := t.slack.Load()
	if d := t.cur.Load(); d != nil && at <= d.at && d.at-at <= slack {
		return d
	}
	d := &deadline{at: at + slack, done: make(chan struct{})}
	d.background = &callContext{Context: background, d: d}
	d.when = t.clock.Now().Add(time.Duration(d.at - now))
	t.clock.AfterFunc(time.Duration(d.at-now), d.expire)
	t.cur.Store(d)
	return d
}

// End ends a call begun with Begin: ctx is the context Begin returned, err
// what the call returned. If the call failed after its deadline passed, End
// returns ErrTimeout wrapped with err; otherwise err as it is. (A call that
// succeeded is a success even if it finished late; a call whose parent
// context ended first keeps its error.)
func (t *Timeout) End(ctx context.Context, err error) error {
	c, ok := ctx.(*callContext)
	if !ok {
		return err
	}
	if c != c.d.background {
		c.finish()
	}
	if err == nil || !c.d.expired() || c.Context.Err() != nil {
		return err
	}
	return t.timedOutWith(err)
}

// timedOutWith counts a timeout, wraps err into ErrTimeout and tells
// OnEvent.
func (t *Timeout) timedOutWith(err error) error {
	t.timedOut.Add(1)
	err = fmt.Errorf("%w after %v: %w", ErrTimeout, t.Timeout(), err)
	if t.onEvent != nil {
		t.onEvent(Event{Name: t.name, Err: err, Snapshot: t.Snapshot()})
	}
	return err
}

// Snapshot returns the timeout's counts now.
func (t *Timeout) Snapshot() Snapshot {
	return Snapshot{
		Name: t.name, Timeout: t.Timeout(), TimedOut: t.timedOut.Load(), Mode: t.mode,
		Abandoned: t.abandoned.Load(), AbandonedTotal: t.abandonedTotal.Load(), AbandonRefused: t.abandonRefused.Load(),
	}
}

// Mode returns Settings.Mode.
func (t *Timeout) Mode() Mode { return t.mode }

// Abandons reports whether the Timeout answers at the deadline whatever
// the work does (Mode Abandon). breakerimpl.Pipeline asks it, and then
// runs the call through Run.
func (t *Timeout) Abandons() bool { return t.mode == Abandon }

// errAbandoned is the work's error of a call answered at its deadline.
var errAbandoned = fmt.Errorf("the work did not return and was abandoned")

// Run runs fn under the Timeout in Abandon mode: on a goroutine of its
// own, with the context Begin gives. It returns fn's error (as End would)
// if fn returns first, and at the deadline ErrTimeout, leaving fn to run
// on; if ctx ends first, ctx's error. A panic in fn is raised again on the
// caller's goroutine when the caller is still waiting, and dropped when fn
// was abandoned. In Cooperative mode Run calls fn on the caller's goroutine,
// as Execute does.
//
// fn must not hand the caller anything through memory after Run returned
// with an error: the caller no longer waits for it.
func (t *Timeout) Run(ctx context.Context, fn func(context.Context) error) error {
	if t.mode != Abandon {
		cctx := t.Begin(ctx)
		return t.End(cctx, fn(cctx))
	}
	if t.abandoned.Load() >= t.maxAb.Load() {
		t.abandonRefused.Add(1)
		return ErrAbandonedFull
	}
	cctx := t.Begin(ctx)
	c := &abandonable{done: make(chan struct{})}
	go c.run(t, cctx, fn)
	select {
	case <-c.done:
	case <-cctx.Done():
		// Count the call abandoned before claiming it, so that the gauge
		// never dips below zero when the work returns at once.
		t.abandoned.Add(1)
		if c.state.CompareAndSwap(running, abandoned) {
			t.abandonedTotal.Add(1)
			if ctx.Err() != nil {
				return ctx.Err() // the caller's own context ended first
			}
			return t.timedOutWith(errAbandoned)
		}
		t.abandoned.Add(-1) // the work returned meanwhile
		<-c.done
	}
	if c.panicked {
		panic(c.panicValue)
	}
	return t.End(cctx, c.err)
}

// The states of an abandonable call.
const (
	running int32 = iota
	returned
	abandoned
)

// abandonable is one call of Run in Abandon mode: whichever of the work
// and the deadline comes first claims it.
type abandonable struct {
	state      atomic.Int32
	done       chan struct{}
	err        error
	panicked   bool
	panicValue any
}

func (c *abandonable) run(t *Timeout, ctx context.Context, fn func(context.Context) error) {
	defer func() {
		if r := recover(); r != nil {
			c.panicked, c.panicValue = true, r
		}
		if c.state.CompareAndSwap(running, returned) {
			close(c.done)
			return
		}
		// Abandoned: nobody reads the result. Release what the call's
		// context holds, and the place it took under MaxAbandoned.
		if cc, ok := ctx.(*callContext); ok && cc != cc.d.background {
			cc.finish()
		}
		t.abandoned.Add(-1)
	}()
	c.err = fn(ctx)
}

// Execute runs fn with a context that ends at the call's deadline and
// returns its result; a failure after the deadline is ErrTimeout (wrapped
// with fn's error). In Cooperative mode it waits for fn to return, so fn
// must return when its context is done; in Abandon mode it answers at the
// deadline with the zero value and ErrTimeout (see Run).
func Execute[T any](ctx context.Context, t *Timeout, fn func(context.Context) (T, error)) (T, error) {
	if t.mode == Abandon {
		var v T
		err := t.Run(ctx, func(ctx context.Context) error {
			var err error
			v, err = fn(ctx)
			return err
		})
		if err != nil {
			var zero T
			return zero, err
		}
		return v, nil
	}
	cctx := t.Begin(ctx)
	v, err := fn(cctx)
	return v, t.End(cctx, err)
}

// deadline is a moment shared by the calls that started within Slack of
// each other, and the one timer that marks it.
type deadline struct {
	at   int64     // on the clock's Nanotime
	when time.Time // the same moment, on the wall clock, for Deadline
	done chan struct{}

	// background is the context of every call of this deadline whose
	// parent is context.Background(): such calls differ in nothing.
	background *callContext

	mu      sync.Mutex
	passed  bool
	waiting *watcher // calls with a cancellable parent that asked for Done, linked
}

func (d *deadline) expired() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func (d *deadline) expire() {
	close(d.done)
	d.mu.Lock()
	d.passed = true
	waiting := d.waiting
	d.waiting = nil
	d.mu.Unlock()
	for w := waiting; w != nil; {
		next := w.next
		w.prev, w.next = nil, nil
		w.cancel(context.DeadlineExceeded)
		w = next
	}
}

// unwatch takes w out of d.waiting, for a call that ended before d passed.
func (d *deadline) unwatch(w *watcher) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.passed {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else if d.waiting == w {
		d.waiting = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}

// callContext is the context of one call: its parent's values, and done
// at the shared deadline or when the parent is.
//
// It is kept to three words because every call with a cancellable parent
// makes one: what a call needs only once its work waits on Done lives in a
// watcher, made then.
type callContext struct {
	context.Context // the parent
	d               *deadline
	watch           atomic.Pointer[watcher] // set the first time Done is asked while the parent can be cancelled
}

// watcher is the part of a call's context that exists once its work has
// waited on Done while the parent can be cancelled: a channel of the
// call's own, closed by whichever of the parent and the deadline ends
// first, or by the end of the call.
type watcher struct {
	mu         sync.Mutex
	done       chan struct{}
	err        error
	stopParent func() bool
	prev, next *watcher // in d.waiting, under d.mu
}

func (c *callContext) Deadline() (time.Time, bool) {
	if pd, ok := c.Context.Deadline(); ok && pd.Before(c.d.when) {
		return pd, true
	}
	return c.d.when, true
}

func (c *callContext) Done() <-chan struct{} {
	if c.Context.Done() == nil {
		return c.d.done // the parent never ends: the shared channel will do
	}
	if w := c.watch.Load(); w != nil {
		return w.done
	}
	return c.watcher().done
}

// watcher returns the call's watcher, making it the first time: it is
// registered with the deadline and the parent, or made done at once if
// either has ended. The deadline's lock makes sure only one is made.
func (c *callContext) watcher() *watcher {
	d := c.d
	d.mu.Lock()
	if w := c.watch.Load(); w != nil {
		d.mu.Unlock()
		return w
	}
	w := &watcher{done: make(chan struct{})}
	parent := c.Context
	registered := false
	switch {
	case d.passed || d.expired():
		w.err = context.DeadlineExceeded
		close(w.done)
	case parent.Err() != nil:
		w.err = parent.Err()
		close(w.done)
	default:
		w.next = d.waiting
		if w.next != nil {
			w.next.prev = w
		}
		d.waiting = w
		registered = true
	}
	c.watch.Store(w)
	d.mu.Unlock()
	if registered {
		stop := context.AfterFunc(parent, func() { w.cancel(parent.Err()) })
		w.mu.Lock()
		if w.err == nil {
			w.stopParent = stop
			stop = nil
		}
		w.mu.Unlock()
		if stop != nil { // ended meanwhile: the parent need not hold it
			stop()
		}
	}
	return w
}

func (c *callContext) Err() error {
	if c.Context.Done() == nil {
		if c.d.expired() {
			return context.DeadlineExceeded
		}
		return nil
	}
	if w := c.watch.Load(); w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.err
	}
	if c.d.expired() {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}

// cancel closes the call's own channel, once, with err.
func (w *watcher) cancel(err error) {
	w.mu.Lock()
	if w.err != nil {
		w.mu.Unlock()
		return
	}
	w.err = err
	close(w.done)
	stop := w.stopParent
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// finish ends a call that returned: a context the work waited on, with a
// parent that can be cancelled, is cancelled now and forgotten by its
// parent and its deadline, so that it holds no memory until the deadline.
// A call whose work never waited costs one load.
func (c *callContext) finish() {
	w := c.watch.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	registered := w.err == nil
	w.mu.Unlock()
	if registered {
		c.d.unwatch(w)
		w.cancel(context.Canceled)
	}
}

func (c *callContext) String() string {
	return fmt.Sprintf("%v.WithDeadline(%v)", c.Context, c.d.when)
}
