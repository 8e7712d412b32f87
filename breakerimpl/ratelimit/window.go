package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/rolling"
)

// WindowSettings configures a SlidingWindow.
//
// Name names the limiter in events and snapshots. It may be empty.
//
// Limit is how many calls any Window may admit. Zero or less refuses every
// call.
//
// Window is the length of the sliding window. Zero or less means a second.
//
// OnEvent is called on every refusal, on the caller's goroutine. Nil means
// no one is told.
//
// Clock is the time source. Nil means clock.Default(); tests pass a
// *clock.Fake.
type WindowSettings struct {
	Name    string
	Limit   int
	Window  time.Duration
	OnEvent func(Event)
	Clock   clock.Clock
}

// SlidingWindow admits at most Limit calls per Window, counted with the
// sliding-window counter: with the calls of the current fixed window (cur)
// and of the one before (prev), and the part p of the current fixed window
// that has passed, the calls in the sliding window ending now are
// estimated as
//
//	prev × (1 − p) + cur
//
// and a call is admitted while that is below Limit. The estimate assumes
// the previous window's calls were spread evenly; it needs no log of
// timestamps. The fixed windows are the two buckets of a rolling window,
// aligned on the limiter's creation. Make one with NewSlidingWindow; it is
// safe for concurrent use.
type SlidingWindow struct {
	name     string
	limit    float64
	window   int64
	onEvent  func(Event)
	rejected atomic.Uint64

	mu sync.Mutex // serialises the check and the count of a call
	// admitted counts the calls admitted; counts is the rolling window of
	// two buckets of Window over it: prev and cur. A call is counted in
	// admitted right after counts was read, under mu, so it falls in cur,
	// and the window needs no timer.
	admitted rolling.Totals
	counts   *rolling.Window
}

// NewSlidingWindow returns an empty SlidingWindow with the given settings.
func NewSlidingWindow(s WindowSettings) *SlidingWindow {
	if s.Window <= 0 {
		s.Window = time.Second
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	w := &SlidingWindow{name: s.Name, limit: float64(max(s.Limit, 0)), window: int64(s.Window), onEvent: s.OnEvent}
	w.counts = rolling.Over(&w.admitted, s.Clock, 2*s.Window, 2)
	return w
}

// read returns the calls of the previous and the current fixed window, and
// the part of the current one that has passed. The caller holds w.mu.
func (w *SlidingWindow) read() (prev, cur, p float64) {
	into := w.counts.Reduce(func(age int, c rolling.Counts) {
		if age == 0 {
			cur = float64(c[0])
		} else {
			prev = float64(c[0])
		}
	})
	return prev, cur, float64(into) / float64(w.window)
}

// Allow admits a call if the window has room, or refuses with ErrLimited.
// The permit's Done does nothing.
func (w *SlidingWindow) Allow(context.Context) (breakerimpl.Permit, error) {
	w.mu.Lock()
	if prev, cur, p := w.read(); prev*(1-p)+cur < w.limit {
		w.admitted[0].Add(1)
		w.mu.Unlock()
		return breakerimpl.Permit{}, nil
	}
	w.mu.Unlock()
	w.rejected.Add(1)
	if w.onEvent != nil {
		w.onEvent(Event{Name: w.name, Kind: Rejected})
	}
	return breakerimpl.Permit{}, ErrLimited
}

// Done does nothing; it is there for breakerimpl.Guard.
func (w *SlidingWindow) Done(breakerimpl.Permit, error) {}

// RetryAfter returns how long until the window admits a call again, in
// whole seconds, at least one.
func (w *SlidingWindow) RetryAfter() time.Duration {
	w.mu.Lock()
	prev, cur, p := w.read()
	w.mu.Unlock()
	if prev*(1-p)+cur < w.limit {
		return retryAfterSeconds(0)
	}
	// Within this fixed window the estimate falls as p grows: it is below
	// Limit once prev × (1 − q) + cur < Limit.
	if cur < w.limit && prev > 0 {
		q := 1 - (w.limit-cur)/prev
		return retryAfterSeconds(time.Duration((q - p) * float64(w.window)))
	}
	// Not before the next fixed window, when cur becomes prev.
	d := time.Duration((1 - p) * float64(w.window))
	if cur > 0 {
		d += time.Duration(max(0, 1-(w.limit)/cur) * float64(w.window))
	}
	return retryAfterSeconds(d)
}

// Snapshot returns the window's state now.
func (w *SlidingWindow) Snapshot() Snapshot {
	w.mu.Lock()
	prev, cur, p := w.read()
	w.mu.Unlock()
	used := prev*(1-p) + cur
	return Snapshot{Name: w.name, Kind: "sliding-window", Limit: w.limit, Available: max(w.limit-used, 0), Rejected: w.rejected.Load()}
}
