package clock

import (
	"sync/atomic"
	"time"
)

// DefaultResolution is the tick of the [Default] clock.
const DefaultResolution = time.Millisecond

// idleAfter is how long a Coarse clock keeps ticking with nobody reading it.
// After that its goroutine ends, so an idle process (or a test checking for
// leaked goroutines) sees none; the next read restarts it.
const idleAfter = 50 * time.Millisecond

var defaultClock = NewCoarse(DefaultResolution)

// Default returns the process-wide coarse clock (resolution
// [DefaultResolution]) that policies use when their settings name no clock.
func Default() *Coarse { return defaultClock }

// Coarse is a Clock whose Nanotime is refreshed by a background ticker, so a
// reading costs one atomic load. A reading lags the true time by at most
// about one resolution (more if the Go scheduler delays the ticker under
// heavy load). Now and the timers are exact: they delegate to the time
// package.
//
// The ticker runs only while the clock is read: after about 50 ms without a
// read its goroutine ends, and the next read restarts it and returns a fresh
// reading. A Coarse clock therefore needs no Stop and leaks nothing.
type Coarse struct {
	realClock
	resolution time.Duration
	idleTicks  int

	now     atomic.Int64 // latest reading, nanoseconds since origin
	used    atomic.Bool  // read since the last tick
	running atomic.Bool  // a ticker goroutine exists
}

// NewCoarse returns a Coarse clock ticking every resolution (at least 100 µs).
func NewCoarse(resolution time.Duration) *Coarse {
	resolution = max(resolution, 100*time.Microsecond)
	c := &Coarse{resolution: resolution, idleTicks: int(max(idleAfter/resolution, 2))}
	c.now.Store(realClock{}.Nanotime())
	return c
}

// Resolution returns the tick of the clock.
func (c *Coarse) Resolution() time.Duration { return c.resolution }

// Nanotime returns the reading of the last tick.
func (c *Coarse) Nanotime() int64 {
	if c.used.Load() {
		return c.now.Load()
	}
	return c.wake()
}

// wake marks the clock as read and starts the ticker if it has stopped.
// The ticker clears used on every tick, so wake runs about once per tick.
func (c *Coarse) wake() int64 {
	c.used.Store(true)
	if !c.running.Load() && c.running.CompareAndSwap(false, true) {
		c.advance(realClock{}.Nanotime())
		go c.tick()
	}
	return c.now.Load()
}

// advance stores n unless a later reading is already stored, so readings
// never go backwards.
func (c *Coarse) advance(n int64) {
	for {
		old := c.now.Load()
		if n <= old || c.now.CompareAndSwap(old, n) {
			return
		}
	}
}

func (c *Coarse) tick() {
	t := time.NewTicker(c.resolution)
	defer t.Stop()
	idle := 0
	for range t.C {
		c.advance(realClock{}.Nanotime())
		if c.used.Swap(false) {
			idle = 0
			continue
		}
		if idle++; idle < c.idleTicks {
			continue
		}
		// Stop, unless a reader came in meanwhile. A reader stores used and
		// then loads running; we store running and then load used: at least
		// one of us sees the other, so a read never finds a stopped ticker
		// while it believes one runs.
		c.running.Store(false)
		if !c.used.Load() || !c.running.CompareAndSwap(false, true) {
			return
		}
		idle = 0
	}
}
