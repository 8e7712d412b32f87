// Package bulkhead caps how many calls run at once against one dependency,
// so that a slow dependency ties up a bounded share of the service (its
// goroutines, connections, memory) instead of all of it.
//
// Two forms, as in hystrix's semaphore and thread-pool isolation:
//
//   - the semaphore (Settings.MaxWait zero): a call beyond MaxConcurrent is
//     rejected at once with ErrFull;
//   - the bounded queue (MaxWait above zero): up to MaxQueue callers wait,
//     in arrival order, at most MaxWait each for a slot, then are rejected
//     with ErrWaitTimeout; a caller that finds the queue full is rejected at
//     once with ErrFull.
//
// Both errors match breakerimpl.ErrRejected with errors.Is, so a
// breakerimpl.Pipeline reports them with Reason "rejected".
//
// A Bulkhead is a breakerimpl.Guard: Allow takes a slot, Permit.Done gives
// it back. While no caller is queued, both are one atomic operation each and
// never allocate.
package bulkhead

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Errors returned when the bulkhead refuses a call. Both match
// breakerimpl.ErrRejected with errors.Is.
var (
	// ErrFull: every slot is taken and, in the queued form, so is every
	// place in the queue.
	ErrFull error = rejection("bulkhead: full")
	// ErrWaitTimeout: the caller waited Settings.MaxWait in the queue and no
	// slot came free.
	ErrWaitTimeout error = rejection("bulkhead: no slot came free within the maximum wait")
)

// rejection is a refusal that is also a breakerimpl.ErrRejected.
type rejection string

func (r rejection) Error() string { return string(r) }
func (r rejection) Unwrap() error { return breakerimpl.ErrRejected }

// DefaultMaxConcurrent is the MaxConcurrent of Settings that leave it zero
// (hystrix's default).
const DefaultMaxConcurrent = 10

// Settings configures a Bulkhead. The zero value is a semaphore of
// DefaultMaxConcurrent slots.
//
// Name names the bulkhead in events and snapshots. It may be empty.
//
// MaxConcurrent is how many calls may hold a slot at once. Zero or less
// means DefaultMaxConcurrent.
//
// MaxWait chooses the form. Zero or less: the semaphore, which rejects a
// call at once when every slot is taken. Above zero: the bounded queue, in
// which a caller waits up to MaxWait for a slot (less if its context ends
// first; it then gets the context's error).
//
// MaxQueue is how many callers may wait at once in the queued form; one
// more is rejected at once with ErrFull. Zero or less means MaxConcurrent.
// It is not used by the semaphore.
//
// OnEvent is called on every rejection, on the rejected caller's goroutine.
// It must be quick and must not call the same bulkhead. Nil means no one is
// told.
//
// Clock times the waits. Nil means clock.Default(); tests pass a
// *clock.Fake.
type Settings struct {
	Name          string
	MaxConcurrent int
	MaxWait       time.Duration
	MaxQueue      int
	OnEvent       func(Event)
	Clock         clock.Clock
}

// EventKind says what happened.
type EventKind string

// The events a bulkhead publishes.
const (
	// Rejected: a call was turned away at once (ErrFull).
	Rejected EventKind = "rejected"
	// WaitTimedOut: a queued caller gave up after MaxWait (ErrWaitTimeout).
	WaitTimedOut EventKind = "wait-timed-out"
)

// Event is published to Settings.OnEvent.
type Event struct {
	Name     string
	Kind     EventKind
	Snapshot Snapshot // taken just after the event
}

// String describes the event on one line, for logs and %v, as in
// "bulkhead recs: rejected (10 of 10 slots taken, 3 waiting)".
func (e Event) String() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	s := e.Snapshot
	return fmt.Sprintf("bulkhead%s: %s (%d of %d slots taken, %d waiting)", name, e.Kind, s.InFlight, s.MaxConcurrent, s.Waiting)
}

// Snapshot is the state of a bulkhead, for metrics.
type Snapshot struct {
	Name          string
	MaxConcurrent int
	MaxWait       time.Duration
	InFlight      int    // calls holding a slot now
	Waiting       int    // callers queued now
	Rejected      uint64 // rejected at once (ErrFull), since creation
	TimedOut      uint64 // rejected after waiting (ErrWaitTimeout), since creation
}

// Bulkhead limits concurrent calls. Make one with New; it is safe for
// concurrent use.
type Bulkhead struct {
	inFlight atomic.Int64
	_        [56]byte // keep the hot counter on its own cache line
	waiting  atomic.Int64

	name    string
	max     atomic.Int64 // SetMaxConcurrent changes it
	maxWait atomic.Int64 // nanoseconds; SetMaxWait changes it
	onEvent func(Event)
	clock   clock.Clock

	mu       sync.Mutex
	queue    []*waiter // FIFO of queued callers
	maxQueue int       // 0: as many as max; read under mu

	rejected atomic.Uint64
	timedOut atomic.Uint64
}

// waiter is one queued caller. granted is set, and ready closed, under the
// bulkhead's lock when a slot is handed to it.
type waiter struct {
	ready   chan struct{}
	granted bool
}

// New returns a Bulkhead with the given settings (see Settings for the
// defaults of zero fields).
func New(s Settings) *Bulkhead {
	if s.MaxConcurrent <= 0 {
		s.MaxConcurrent = DefaultMaxConcurrent
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	b := &Bulkhead{name: s.Name, maxQueue: max(s.MaxQueue, 0), onEvent: s.OnEvent, clock: s.Clock}
	b.max.Store(int64(s.MaxConcurrent))
	b.maxWait.Store(int64(max(s.MaxWait, 0)))
	return b
}

// SetMaxConcurrent changes Settings.MaxConcurrent (zero or less means
// DefaultMaxConcurrent). Raised, the new slots go at once to queued
// callers; lowered, calls holding a slot keep it, and new ones are
// admitted once fewer than n hold one. Package reload calls it when a
// policy file changes.
func (b *Bulkhead) SetMaxConcurrent(n int) {
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	b.max.Store(int64(n))
	b.mu.Lock()
	b.dispatchLocked()
	b.mu.Unlock()
}

// SetMaxWait changes Settings.MaxWait, for callers that come from now on:
// zero or less makes the bulkhead a semaphore, above zero a bounded queue.
func (b *Bulkhead) SetMaxWait(d time.Duration) { b.maxWait.Store(int64(max(d, 0))) }

// SetMaxQueue changes Settings.MaxQueue (zero or less means
// MaxConcurrent). Callers already queued keep their place.
func (b *Bulkhead) SetMaxQueue(n int) {
	b.mu.Lock()
	b.maxQueue = max(n, 0)
	b.mu.Unlock()
}

// Settings returns the limits in force (Name, MaxConcurrent, MaxWait,
// MaxQueue; MaxQueue zero means MaxConcurrent).
func (b *Bulkhead) Settings() Settings {
	b.mu.Lock()
	q := b.maxQueue
	b.mu.Unlock()
	return Settings{Name: b.name, MaxConcurrent: int(b.max.Load()), MaxWait: time.Duration(b.maxWait.Load()), MaxQueue: q}
}

// Name returns Settings.Name.
func (b *Bulkhead) Name() string { return b.name }

// Allow takes a slot, waiting for one in the queued form, or refuses with
// ErrFull or ErrWaitTimeout (or ctx's error if ctx ends while waiting).
// When it admits, call Done on the returned permit exactly once, when the
// call has finished.
func (b *Bulkhead) Allow(ctx context.Context) (breakerimpl.Permit, error) {
	// While nobody is queued, a free slot is taken with one compare-and-swap;
	// queued callers come first otherwise.
	if b.waiting.Load() == 0 {
		if n := b.inFlight.Load(); n < b.max.Load() && b.inFlight.CompareAndSwap(n, n+1) {
			return breakerimpl.NewPermit(b, 0, 0), nil
		}
	}
	return b.allow(ctx)
}

func (b *Bulkhead) allow(ctx context.Context) (breakerimpl.Permit, error) {
	maxWait := time.Duration(b.maxWait.Load())
	if maxWait == 0 {
		if b.tryAcquire() {
			return breakerimpl.NewPermit(b, 0, 0), nil
		}
		return breakerimpl.Permit{}, b.reject(ErrFull)
	}
	if err := ctx.Err(); err != nil {
		return breakerimpl.Permit{}, err
	}

	b.mu.Lock()
	if len(b.queue) == 0 && b.tryAcquire() {
		b.mu.Unlock()
		return breakerimpl.NewPermit(b, 0, 0), nil
	}
	limit := b.maxQueue
	if limit == 0 {
		limit = int(b.max.Load())
	}
	if len(b.queue) >= limit {
		b.mu.Unlock()
		return breakerimpl.Permit{}, b.reject(ErrFull)
	}
	w := &waiter{ready: make(chan struct{})}
	b.queue = append(b.queue, w)
	b.waiting.Add(1)
	b.dispatchLocked() // a slot may have come free since the fast path looked
	b.mu.Unlock()

	t := b.clock.NewTimer(maxWait)
	var err error
	select {
	case <-w.ready:
	case <-t.C():
		err = ErrWaitTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	t.Stop()
	if err == nil {
		return breakerimpl.NewPermit(b, 0, 0), nil
	}

	b.mu.Lock()
	if w.granted {
		// The slot came at the same moment the wait ended.
		b.mu.Unlock()
		if err == ErrWaitTimeout {
			return breakerimpl.NewPermit(b, 0, 0), nil
		}
		b.release()
		return breakerimpl.Permit{}, err
	}
	for i, q := range b.queue {
		if q == w {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			break
		}
	}
	b.waiting.Add(-1)
	b.mu.Unlock()
	if err == ErrWaitTimeout {
		b.timedOut.Add(1)
		b.publish(WaitTimedOut)
	}
	return breakerimpl.Permit{}, err
}

// tryAcquire takes a slot if one is free.
func (b *Bulkhead) tryAcquire() bool {
	for {
		n := b.inFlight.Load()
		if n >= b.max.Load() {
			return false
		}
		if b.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// dispatchLocked hands free slots to queued callers, first come first
// served. The caller holds b.mu.
//
// No slot is lost between a release and a caller joining the queue: the
// caller counts itself in waiting before it tries to take a slot (here,
// under the lock), and a release frees its slot before it reads waiting. So
// either the caller sees the slot free, or the releaser sees the caller and
// dispatches.
func (b *Bulkhead) dispatchLocked() {
	for len(b.queue) > 0 && b.tryAcquire() {
		w := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		b.waiting.Add(-1)
		w.granted = true
		close(w.ready)
	}
	if len(b.queue) == 0 {
		b.queue = b.queue[:0:0]
	}
}

// Done gives back the slot of a call admitted by Allow; use Permit.Done
// rather than calling it directly.
func (b *Bulkhead) Done(breakerimpl.Permit, error) { b.release() }

func (b *Bulkhead) release() {
	b.inFlight.Add(-1)
	if b.waiting.Load() != 0 {
		b.mu.Lock()
		b.dispatchLocked()
		b.mu.Unlock()
	}
}

func (b *Bulkhead) reject(err error) error {
	b.rejected.Add(1)
	b.publish(Rejected)
	return err
}

func (b *Bulkhead) publish(kind EventKind) {
	if b.onEvent != nil {
		b.onEvent(Event{Name: b.name, Kind: kind, Snapshot: b.Snapshot()})
	}
}

// Snapshot returns the bulkhead's counts now.
func (b *Bulkhead) Snapshot() Snapshot {
	return Snapshot{
		Name:          b.name,
		MaxConcurrent: int(b.max.Load()),
		MaxWait:       time.Duration(b.maxWait.Load()),
		InFlight:      int(b.inFlight.Load()),
		Waiting:       int(b.waiting.Load()),
		Rejected:      b.rejected.Load(),
		TimedOut:      b.timedOut.Load(),
	}
}

// Execute runs fn(ctx) if b gives it a slot, and gives the slot back when
// fn returns (or panics; the panic goes on). When b refuses, fn does not
// run and the error is ErrFull, ErrWaitTimeout or ctx's error.
func Execute[T any](ctx context.Context, b *Bulkhead, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if _, err := b.Allow(ctx); err != nil {
		return zero, err
	}
	defer b.release()
	return fn(ctx)
}
