package clock

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Fake is a Clock for tests: time stands still until Advance moves it, and
// timers fire during Advance, in order of their deadlines, in the goroutine
// that calls Advance. Nothing ever sleeps. A Fake is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	start  time.Time
	now    time.Time
	nanos  atomic.Int64 // now - start, readable without the lock
	timers []*fakeTimer
	seq    uint64
}

// NewFake returns a Fake clock reading start (a fixed date if start is zero).
// Its Nanotime starts at 0.
func NewFake(start time.Time) *Fake {
	if start.IsZero() {
		start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return &Fake{start: start, now: start}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Nanotime returns the fake time elapsed since the clock was made.
func (f *Fake) Nanotime() int64 { return f.nanos.Load() }

// Advance moves the clock forward by d (nothing happens for d <= 0), firing
// every timer whose deadline it passes; the clock reads each timer's
// deadline while that timer fires.
func (f *Fake) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	f.mu.Lock()
	end := f.now.Add(d)
	for {
		t := f.nextDue(end)
		if t == nil {
			break
		}
		f.setNow(t.when)
		f.mu.Unlock()
		t.fire()
		f.mu.Lock()
	}
	f.setNow(end)
	f.mu.Unlock()
}

// Timers returns how many timers are waiting to fire, so a test can wait for
// the code under test to arm one before advancing.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc implements Clock.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{f: f, fn: fn}
	t.Reset(d)
	return t
}

func (f *Fake) setNow(t time.Time) {
	f.now = t
	f.nanos.Store(int64(t.Sub(f.start)))
}

// nextDue removes and returns the earliest timer due at or before end.
// f.mu is held.
func (f *Fake) nextDue(end time.Time) *fakeTimer {
	if len(f.timers) == 0 || f.timers[0].when.After(end) {
		return nil
	}
	t := f.timers[0]
	f.timers = slices.Delete(f.timers, 0, 1)
	return t
}

// remove takes t off the schedule and reports whether it was on it.
// f.mu is held.
func (f *Fake) remove(t *fakeTimer) bool {
	i := slices.Index(f.timers, t)
	if i < 0 {
		return false
	}
	f.timers = slices.Delete(f.timers, i, i+1)
	return true
}

type fakeTimer struct {
	f    *Fake
	when time.Time
	seq  uint64
	ch   chan time.Time
	fn   func()
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.remove(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	active := f.remove(t)
	f.seq++
	t.when, t.seq = f.now.Add(d), f.seq
	i, _ := slices.BinarySearchFunc(f.timers, t, func(a, b *fakeTimer) int {
		if c := a.when.Compare(b.when); c != 0 {
			return c
		}
		return cmp.Compare(a.seq, b.seq)
	})
	f.timers = slices.Insert(f.timers, i, t)
	if d <= 0 {
		// Due now: fire without waiting for an Advance, as a real timer would.
		f.timers = slices.Delete(f.timers, i, i+1)
		f.mu.Unlock()
		t.fire()
		f.mu.Lock()
	}
	return active
}

func (t *fakeTimer) fire() {
	if t.fn != nil {
		t.fn()
		return
	}
	select {
	case t.ch <- t.when:
	default: // like a real timer, never block the clock
	}
}

// Instant is a Fake on which every wait ends at once: a timer made with
// NewTimer moves the clock to its deadline as it is made (firing the
// timers due on the way), and the length of each such wait is recorded.
// It is for tests of code that backs off or waits between attempts (a
// retry, a hedge): the waits take no time, and the test can check them.
// AfterFunc timers are not moved to: they fire when something advances
// the clock past them. An Instant is safe for concurrent use.
type Instant struct {
	*Fake
	mu    sync.Mutex
	waits []time.Duration
}

// NewInstant returns an Instant reading start (a fixed date if start is
// zero), as NewFake.
func NewInstant(start time.Time) *Instant { return &Instant{Fake: NewFake(start)} }

// NewTimer records d, makes a timer due in d and advances the clock by d,
// so the timer has fired when NewTimer returns.
func (c *Instant) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	t := c.Fake.NewTimer(d)
	c.Fake.Advance(d)
	return t
}

// Waits returns the waits NewTimer recorded, oldest first, since the
// clock was made or ResetWaits last ran.
func (c *Instant) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

// ResetWaits forgets the waits recorded so far.
func (c *Instant) ResetWaits() {
	c.mu.Lock()
	c.waits = nil
	c.mu.Unlock()
}
