package circuitbreaker

import (
	"sync/atomic"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// CountWindow judges the last Calls calls, as resilience4j's COUNT_BASED
// sliding window does (slidingWindowSize): it trips when at least
// MinRequests of them were counted and at least Percent failed
// (failureRateThreshold) or, with SlowPercent set, at least SlowPercent of
// them were slow (slowCallRateThreshold: calls that took longer than
// Settings.SlowCallThreshold).
//
// With SlowPercent set, a slow call that succeeded is counted as slow, not
// as a failure: the two rates are judged apart, so that a dependency that
// answers, but slowly, trips on its own threshold. Without it, a slow call
// is a failure, as with the other rules.
//
// Counts fills Requests, Successes (slow successes included), Failures
// and SlowCalls, over the calls of the window. Each call costs two atomic
// adds and one swap, a little more than ErrorRate's one add.
type CountWindow struct {
	// Calls is how many of the last calls are judged. Zero or less means
	// 100 (resilience4j's default); at most 1<<20.
	Calls int
	// MinRequests is the calls counted before the rates are judged. Zero
	// or less means Calls (resilience4j's minimumNumberOfCalls defaults to
	// the window); above Calls means Calls.
	MinRequests int
	// Percent is the failure percentage (1–100) that trips. Zero or less
	// means 50.
	Percent int
	// SlowPercent is the slow-call percentage (1–100) that trips; zero
	// means slow calls are failures and no slow rate is judged.
	SlowPercent int
}

func (r CountWindow) withDefaults() CountWindow {
	if r.Calls <= 0 {
		r.Calls = 100
	}
	r.Calls = min(r.Calls, 1<<20)
	if r.MinRequests <= 0 || r.MinRequests > r.Calls {
		r.MinRequests = r.Calls
	}
	if r.Percent <= 0 {
		r.Percent = 50
	}
	r.Percent = min(r.Percent, 100)
	r.SlowPercent = min(max(r.SlowPercent, 0), 100)
	return r
}

// NewWindow implements Rule.
func (r CountWindow) NewWindow(clock.Clock) Window {
	r = r.withDefaults()
	w := &countWindow{slots: make([]atomic.Uint32, r.Calls)}
	w.set(r)
	return w
}

// What a slot of a countWindow holds.
const (
	slotEmpty uint32 = iota
	slotSuccess
	slotFailure
	slotSlow
)

// countWindow is a ring of the last calls' outcomes. A call takes the next
// slot and swaps its outcome in; the counts move by the difference between
// the outcome it put and the one it pushed out, so they always equal the
// ring's contents once the calls in progress have finished.
type countWindow struct {
	slots                 []atomic.Uint32
	next                  atomic.Uint64
	calls, failures, slow atomic.Int64
	minRequests, percent  atomic.Int64
	slowPercent           atomic.Int64
}

func (w *countWindow) set(r CountWindow) {
	w.minRequests.Store(int64(r.MinRequests))
	w.percent.Store(int64(r.Percent))
	w.slowPercent.Store(int64(r.SlowPercent))
}

func (w *countWindow) record(o uint32) {
	i := w.next.Add(1) - 1
	old := w.slots[i%uint64(len(w.slots))].Swap(o)
	if old == o {
		return
	}
	if old == slotEmpty {
		w.calls.Add(1)
	}
	switch old {
	case slotFailure:
		w.failures.Add(-1)
	case slotSlow:
		w.slow.Add(-1)
	}
	switch o {
	case slotFailure:
		w.failures.Add(1)
	case slotSlow:
		w.slow.Add(1)
	}
}

func (w *countWindow) trips() bool {
	n := w.calls.Load()
	if n < w.minRequests.Load() {
		return false
	}
	if w.failures.Load()*100 >= w.percent.Load()*n {
		return true
	}
	sp := w.slowPercent.Load()
	return sp > 0 && w.slow.Load()*100 >= sp*n
}

func (w *countWindow) Success() { w.record(slotSuccess) }

func (w *countWindow) Failure() bool {
	w.record(slotFailure)
	return w.trips()
}

// Slow records a call that succeeded but was slow, and reports whether
// the breaker should trip. The breaker calls it instead of Failure when
// the rule judges a slow rate.
func (w *countWindow) Slow() bool {
	if w.slowPercent.Load() == 0 {
		return w.Failure()
	}
	w.record(slotSlow)
	return w.trips()
}

func (w *countWindow) Counts() Counts {
	n, f, s := w.calls.Load(), w.failures.Load(), w.slow.Load()
	return Counts{Requests: uint64(n), Successes: uint64(n - f), Failures: uint64(f), SlowCalls: uint64(s)}
}

func (w *countWindow) reconfigure(r Rule) bool {
	c, ok := r.(CountWindow)
	if !ok {
		return false
	}
	c = c.withDefaults()
	if c.Calls != len(w.slots) {
		return false
	}
	w.set(c)
	return true
}

// slowWindow is a window that counts slow calls apart from failures.
type slowWindow interface {
	Slow() (trip bool)
}
