// Package rolling counts events over a rolling window of time, as go-zero's
// collection.RollingWindow does: a ring of buckets of equal width, the
// oldest dropped as the clock moves on. It is the one window behind the
// circuit breaker's error-rate and adaptive rules, the retry budget, the
// load shedder and the sliding-window rate limiter.
//
// A window counts Slots kinds of event; each user gives the slots its own
// meaning (a breaker counts successes, failures and rejections, a shedder
// passes and their summed latency). The counts are Totals that only grow:
// at each bucket boundary the window records the totals of that moment (a
// mark), and a bucket's count is the difference between its mark and the
// next. No count is ever cleared, so none is lost to a race with a turn: a
// count added while the ring turns falls in the bucket that ends or in the
// one that begins. The buckets are aligned on the moment the window was
// made.
//
// Add is one atomic add to a total, and reads no clock: a timer on the
// window's clock marks the window due when the live bucket ends, and the
// Add that finds it due turns the ring, reading the clock then, and sets
// the timer for the end of the new live bucket. Sum and Reduce read the
// clock themselves. A timer that fires late attributes the counts added
// meanwhile to the bucket that ended. A window keeps a timer only while
// Add is used: none before the first Add, none past the end of the bucket
// of the last.
//
// An owner may also add to the Totals directly, right after a Sum or a
// Reduce: the count falls in the live bucket they found. A window only
// counted so needs no timer at all.
//
// Several windows, one after another, may count over the same Totals (a
// circuit breaker makes one per closed period over its own lifetime
// counts): each counts from the totals as they were when it was made.
package rolling

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Slots is how many kinds of event a window counts.
const Slots = 3

// Counts are counts by slot: of one bucket, or of several added up.
type Counts [Slots]int64

// Totals are counts by slot that only grow. Read them with Load.
type Totals [Slots]atomic.Int64

// Load returns the totals now.
func (t *Totals) Load() Counts {
	var c Counts
	for i := range c {
		c[i] = t[i].Load()
	}
	return c
}

// Window is a rolling window. Make one with New or Over; it is safe for
// concurrent use.
type Window struct {
	clock  clock.Clock
	width  int64 // of a bucket, in nanoseconds
	totals *Totals
	due    atomic.Bool  // Add must look at the clock: set at first and by the timer, cleared by wake
	end    atomic.Int64 // Nanotime at which the live bucket ends

	// oldest is the mark of the oldest bucket, for Sum to read without the
	// lock.
	oldest Totals

	mu    sync.Mutex // held to turn the ring, and to read marks
	live  int        // the bucket being filled
	marks []Counts   // marks[i] is the totals when bucket i began
}

// New returns an empty window of n buckets spanning span on c (n at least
// 1, a bucket at least a nanosecond wide), counting in totals of its own.
// Its first bucket begins now.
func New(c clock.Clock, span time.Duration, n int) *Window {
	return Over(new(Totals), c, span, n)
}

// Over is New counting in t, from t's counts now.
func Over(t *Totals, c clock.Clock, span time.Duration, n int) *Window {
	n = max(n, 1)
	w := &Window{clock: c, width: max(int64(span)/int64(n), 1), totals: t, marks: make([]Counts, n)}
	now := t.Load()
	for i := range w.marks {
		w.marks[i] = now
	}
	w.setOldest(now)
	w.end.Store(c.Nanotime() + w.width)
	w.due.Store(true) // the first Add sets the timer
	return w
}

// Width returns the width of a bucket.
func (w *Window) Width() time.Duration { return time.Duration(w.width) }

// Add adds n to slot and returns the slot's new total.
func (w *Window) Add(slot int, n int64) int64 {
	if w.due.Load() {
		w.wake()
	}
	return w.totals[slot].Add(n)
}

// wake turns the ring to the clock's time and sets a timer that marks the
// window due at the end of the live bucket. The timer marks it due even if
// a Sum or Reduce has turned the ring meanwhile: the Add that finds it due
// then only sets the timer again, for the new live bucket.
func (w *Window) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.due.Load() {
		return // another Add woke it
	}
	now := w.clock.Nanotime()
	w.turnTo(now)
	w.due.Store(false)
	w.clock.AfterFunc(time.Duration(w.end.Load()-now), func() { w.due.Store(true) })
}

// Sum returns the counts of the whole window.
func (w *Window) Sum() Counts {
	if w.clock.Nanotime() >= w.end.Load() {
		w.turn()
	}
	// The mark first: the totals read after it can only be larger, so the
	// differences are never negative.
	start := w.oldest.Load()
	sum := w.totals.Load()
	for i := range sum {
		sum[i] -= start[i]
	}
	return sum
}

// Reduce calls fn with the counts of every bucket of the window, newest
// first: age 0 is the live bucket, which began less than a bucket's width
// ago, age 1 the one before it, and so on. It returns how far the clock is
// into the live bucket. fn runs with the window locked: it must not call
// the window.
func (w *Window) Reduce(fn func(age int, c Counts)) (into time.Duration) {
	now := w.clock.Nanotime()
	if now >= w.end.Load() {
		w.turn()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	next := w.totals.Load() // where the live bucket ends, so far
	n := len(w.marks)
	for age := range n {
		i := (w.live - age + n) % n
		var c Counts
		for s := range c {
			c[s] = next[s] - w.marks[i][s]
		}
		fn(age, c)
		next = w.marks[i]
	}
	return time.Duration(max(now-(w.end.Load()-w.width), 0))
}

// turn moves the live bucket on to the one that holds the clock's time,
// if the live bucket has ended.
func (w *Window) turn() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.turnTo(w.clock.Nanotime())
}

// turnTo moves the live bucket on to the one that holds now, marking the
// totals at the start of each bucket it moves to, if the live bucket has
// ended. w.mu is held.
func (w *Window) turnTo(now int64) {
	end := w.end.Load()
	if now < end {
		return // another caller turned it
	}
	steps := (now-end)/w.width + 1
	n := len(w.marks)
	m := w.totals.Load()
	for range min(steps, int64(n)) {
		w.live = (w.live + 1) % n
		w.marks[w.live] = m
	}
	w.setOldest(w.marks[(w.live+1)%n])
	w.end.Store(end + steps*w.width)
}

func (w *Window) setOldest(m Counts) {
	for i, v := range m {
		w.oldest[i].Store(v)
	}
}
