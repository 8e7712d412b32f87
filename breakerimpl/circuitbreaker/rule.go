package circuitbreaker

import (
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Rule decides when a closed breaker trips. A rule is a plain settings
// value; NewWindow makes the counting state for one closed period. Write
// your own by implementing both interfaces.
type Rule interface {
	// NewWindow returns fresh counts for a closed period that starts now on
	// c. The breaker calls it each time it closes.
	NewWindow(c clock.Clock) Window
}

// Window counts the outcomes of calls during one closed period. Its methods
// are called concurrently, on every call: Success is the breaker's hot path
// and should neither lock nor allocate.
type Window interface {
	// Success records a successful call.
	Success()
	// Failure records a failed call (slow calls included) and reports
	// whether the breaker should trip.
	Failure() (trip bool)
	// Counts returns the counts the rule judges by.
	Counts() Counts
}

// Counts are the figures a rule judges by. Each rule fills the fields it
// keeps and leaves the others zero.
type Counts struct {
	// Requests is Successes + Failures (ignored calls are not counted).
	Requests uint64
	// Successes in the window (ErrorRate) or successful probes (half-open).
	Successes uint64
	// Failures in the window, slow calls included (ErrorRate), or failed
	// probes (half-open).
	Failures uint64
	// ConsecutiveFailures since the last success (ConsecutiveFailures).
	ConsecutiveFailures uint64
}

// ConsecutiveFailures trips after Threshold failures in a row, as
// sony/gobreaker's usual ReadyToTrip does. A success resets the run.
// Counts fills ConsecutiveFailures only.
type ConsecutiveFailures struct {
	// Threshold is the run of failures that trips. Zero or less means 5.
	Threshold int
}

// NewWindow implements Rule.
func (r ConsecutiveFailures) NewWindow(clock.Clock) Window {
	if r.Threshold <= 0 {
		r.Threshold = 5
	}
	return &consecutiveWindow{threshold: uint64(r.Threshold)}
}

type consecutiveWindow struct {
	threshold uint64
	failures  paddedUint64
}

func (w *consecutiveWindow) Success() {
	// Read before writing: while all goes well the cache line stays shared
	// between cores instead of bouncing on every call.
	if w.failures.Load() != 0 {
		w.failures.Store(0)
	}
}

func (w *consecutiveWindow) Failure() bool { return w.failures.Add(1) >= w.threshold }

func (w *consecutiveWindow) Counts() Counts {
	return Counts{ConsecutiveFailures: w.failures.Load()}
}

// ErrorRate trips when, over a rolling window, at least MinRequests calls
// were counted and at least Percent of them failed (hystrix semantics:
// circuitBreaker.requestVolumeThreshold and errorThresholdPercentage over
// metrics.rollingStats). The window is a ring of Buckets time buckets
// covering Window; the oldest bucket is dropped as time moves on, so the
// window covers between Window − Window/Buckets and Window of history.
//
// Counts fills Requests, Successes and Failures. Under heavy concurrency a
// count landing exactly as a bucket turns over may be attributed to the
// neighbouring bucket; none is lost.
type ErrorRate struct {
	// Window is the span of history judged. Zero or less means 10 s.
	Window time.Duration
	// Buckets is how many slices the window is cut into. Zero or less means
	// 10; at most 1000; the bucket width is at least 1 ms.
	Buckets int
	// MinRequests is the request volume below which the breaker never trips,
	// however many fail. Zero or less means 20.
	MinRequests int
	// Percent is the failure percentage (1–100) at or above which the
	// breaker trips. Zero or less means 50; above 100 means 100.
	Percent int
}

// NewWindow implements Rule.
func (r ErrorRate) NewWindow(c clock.Clock) Window {
	if r.Window <= 0 {
		r.Window = 10 * time.Second
	}
	if r.Buckets <= 0 {
		r.Buckets = 10
	}
	r.Buckets = min(r.Buckets, 1000, max(int(r.Window/time.Millisecond), 1))
	if r.MinRequests <= 0 {
		r.MinRequests = 20
	}
	if r.Percent <= 0 {
		r.Percent = 50
	}
	r.Percent = min(r.Percent, 100)
	coarse, _ := c.(*clock.Coarse)
	w := &rateWindow{
		clock:       c,
		coarse:      coarse,
		width:       int64(r.Window) / int64(r.Buckets),
		buckets:     r.Buckets,
		minRequests: uint64(r.MinRequests),
		percent:     uint64(r.Percent),
		counters:    newStripes(2 * r.Buckets),
	}
	w.next.Store(c.Nanotime() + w.width)
	return w
}

// rateWindow keeps, per stripe, a success and a failure counter per bucket
// (see stripes). Writers add to the live bucket; the bucket turns over
// lazily, on the first call that sees the clock pass next, and the sums of
// the finished buckets are kept in base so that judging a failure reads
// only the live bucket's stripes.
type rateWindow struct {
	clock       clock.Clock
	coarse      *clock.Coarse // clock, when coarse: read without an interface call
	width       int64         // of a bucket, in nanoseconds
	buckets     int
	minRequests uint64
	percent     uint64

	next paddedInt64  // Nanotime at which the live bucket ends
	live paddedUint64 // index of the live bucket
	// base holds the successes and failures of the finished buckets in
	// the window.
	baseSuccesses, baseFailures paddedUint64
	turning                     paddedMutex // held by the caller turning the buckets
	_                           [cacheLine]byte
	counters                    stripes // [stripe][bucket][success, failure]
	_                           [cacheLine]byte
}

// Success is add(0) written out: it is the hot path, and add is too big
// to be inlined.
func (w *rateWindow) Success() {
	var now int64
	if c := w.coarse; c != nil {
		now = c.Nanotime()
	} else {
		now = w.clock.Nanotime()
	}
	if now >= w.next.Load() {
		w.turn(now)
	}
	w.counters.add(int(w.live.Load())*2, 1)
}

func (w *rateWindow) Failure() bool {
	w.add(1)
	c := w.Counts()
	return c.Requests >= w.minRequests && c.Failures*100 >= w.percent*c.Requests
}

func (w *rateWindow) add(kind int) {
	if now := w.nanotime(); now >= w.next.Load() {
		w.turn(now)
	}
	w.counters.add(int(w.live.Load())*2+kind, 1)
}

func (w *rateWindow) nanotime() int64 {
	if c := w.coarse; c != nil {
		return c.Nanotime()
	}
	return w.clock.Nanotime()
}

func (w *rateWindow) Counts() Counts {
	if now := w.nanotime(); now >= w.next.Load() {
		w.turn(now)
	}
	b := int(w.live.Load())
	s := w.baseSuccesses.Load() + w.counters.sum(b*2)
	f := w.baseFailures.Load() + w.counters.sum(b*2+1)
	return Counts{Requests: s + f, Successes: s, Failures: f}
}

// turn moves the live bucket forward to the one holding now, clearing the
// buckets it passes. One caller turns; the others go on counting in the
// bucket that was live when they looked, which is at most one bucket late.
func (w *rateWindow) turn(now int64) {
	if !w.turning.TryLock() {
		return
	}
	defer w.turning.Unlock()
	next := w.next.Load()
	if now < next {
		return
	}
	steps := (now-next)/w.width + 1
	b := int(w.live.Load())
	for range min(steps, int64(w.buckets)) {
		b = (b + 1) % w.buckets
		w.counters.clear(b*2, b*2+1)
	}
	var s, f uint64
	for i := range w.buckets {
		if i != b {
			s += w.counters.sum(i * 2)
			f += w.counters.sum(i*2 + 1)
		}
	}
	// Publish the new live bucket before the new sums: a reader in between
	// undercounts for a moment, which can delay a trip but never cause one.
	w.live.Store(uint64(b))
	w.baseSuccesses.Store(s)
	w.baseFailures.Store(f)
	w.next.Store(next + steps*w.width)
}
