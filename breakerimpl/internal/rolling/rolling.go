// Package rolling counts events over a rolling window of time, as go-zero's
// collection.RollingWindow does: a ring of buckets of equal width, the
// oldest dropped as the clock moves on. It is the one window behind the
// circuit breaker's error-rate and adaptive rules, the retry budget, the
// load shedder and the sliding-window rate limiter.
//
// A bucket holds Slots counts; each user gives them its own meaning (a
// breaker counts successes, failures and rejections, a shedder passes and
// their summed latency). Add is lock-free, so that it can sit on a hot
// path: it reads the clock once, and only the call that finds the live
// bucket ended takes the lock to turn the ring. The buckets are aligned on
// the moment the window was made.
//
// Counts are exact while one goroutine at a time uses a window. Under
// concurrency, an Add that races with the turn of the ring lands in the
// bucket that just ended instead of the one that just began; none is lost
// unless a goroutine stalls between reading the live bucket and adding to
// it for a whole window.
package rolling

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Slots is how many counts a bucket holds.
const Slots = 3

// Counts are the counts of one bucket, or of several added up, by slot.
type Counts [Slots]int64

// Window is a rolling window. Make one with New; it is safe for concurrent
// use.
type Window struct {
	clock   clock.Clock
	width   int64 // of a bucket, in nanoseconds
	buckets []bucket

	live atomic.Int64 // index of the bucket being filled
	end  atomic.Int64 // Nanotime at which the live bucket ends

	mu sync.Mutex // held to turn the ring
}

type bucket [Slots]atomic.Int64

// New returns an empty window of n buckets spanning span on c (n at least
// 1, a bucket at least a nanosecond wide). Its first bucket begins now.
func New(c clock.Clock, span time.Duration, n int) *Window {
	n = max(n, 1)
	w := &Window{clock: c, width: max(int64(span)/int64(n), 1), buckets: make([]bucket, n)}
	w.end.Store(c.Nanotime() + w.width)
	return w
}

// Width returns the width of a bucket.
func (w *Window) Width() time.Duration { return time.Duration(w.width) }

// Add adds n to slot of the live bucket and returns the slot's new count.
func (w *Window) Add(slot int, n int64) int64 {
	if now := w.clock.Nanotime(); now >= w.end.Load() {
		w.turn(now)
	}
	return w.buckets[w.live.Load()][slot].Add(n)
}

// Sum returns the counts of the whole window added up.
func (w *Window) Sum() Counts {
	var sum Counts
	w.Reduce(func(_ int, c Counts) {
		for i := range sum {
			sum[i] += c[i]
		}
	})
	return sum
}

// Reduce calls fn with the counts of every bucket of the window, newest
// first: age 0 is the live bucket, which began less than a bucket's width
// ago, age 1 the one before it, and so on. It returns how far the clock is
// into the live bucket.
func (w *Window) Reduce(fn func(age int, c Counts)) (into time.Duration) {
	now := w.clock.Nanotime()
	if now >= w.end.Load() {
		w.turn(now)
	}
	live := int(w.live.Load())
	n := len(w.buckets)
	for age := range n {
		b := &w.buckets[(live-age+n)%n]
		var c Counts
		for i := range c {
			c[i] = b[i].Load()
		}
		fn(age, c)
	}
	return time.Duration(max(now-(w.end.Load()-w.width), 0))
}

// turn moves the live bucket on to the one that holds now, emptying the
// buckets it moves to, if the live bucket has ended.
func (w *Window) turn(now int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	end := w.end.Load()
	if now < end {
		return // another caller turned it
	}
	steps := (now-end)/w.width + 1
	n := int64(len(w.buckets))
	live := w.live.Load()
	for range min(steps, n) {
		live = (live + 1) % n
		for i := range w.buckets[live] {
			w.buckets[live][i].Store(0)
		}
	}
	// Emptied before it is made live, so that no Add to it is lost.
	w.live.Store(live)
	w.end.Store(end + steps*w.width)
}
