// Package clock gives breakerimpl's policies their sense of time.
//
// Every policy takes a [Clock] so that tests can drive time by hand with a
// [Fake] and never sleep ([Instant], a Fake on which every wait ends at
// once, suits retries and hedges). Hot paths read [Clock.Nanotime], which on the
// default clock ([Default], a [Coarse] clock) is one atomic load instead of
// a call to time.Now (about 40 ns on some virtual machines).
package clock

import (
	"context"
	"time"
)

// Clock is the source of time for a policy.
type Clock interface {
	// Now returns the current wall-clock time.
	Now() time.Time
	// Nanotime returns a monotonic reading in nanoseconds since an origin
	// fixed for the life of the Clock. Only differences between readings of
	// the same Clock mean anything. It must be cheap: policies call it on
	// their hot paths.
	Nanotime() int64
	// NewTimer returns a Timer whose channel receives the time once d has
	// passed, like time.NewTimer.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f in its own goroutine (Fake: in the goroutine that
	// advances the clock) once d has passed, like time.AfterFunc.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a single event scheduled on a Clock, like *time.Timer.
type Timer interface {
	// C returns the channel the time is sent on. It is nil for a timer made
	// by AfterFunc.
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether the call
	// stopped the timer (false if it had already fired or been stopped).
	Stop() bool
	// Reset changes the timer to fire after d. It reports whether the timer
	// had been active.
	Reset(d time.Duration) bool
}

// Sleep waits for d on c, or until ctx is done, whichever comes first. It
// returns ctx.Err() if ctx ended the wait and nil otherwise.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Real returns a Clock that reads the system clock on every call. Prefer
// [Default] for policies: its Nanotime is far cheaper.
func Real() Clock { return realClock{} }

// origin anchors Nanotime readings of the real and coarse clocks; the
// monotonic part of time.Since(origin) makes them immune to wall-clock jumps.
var origin = time.Now()

type realClock struct{}

func (realClock) Now() time.Time  { return time.Now() }
func (realClock) Nanotime() int64 { return int64(time.Since(origin)) }

func (realClock) NewTimer(d time.Duration) Timer {
	return realTimer{time.NewTimer(d)}
}

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
