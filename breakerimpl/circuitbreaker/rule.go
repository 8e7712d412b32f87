package circuitbreaker

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/rolling"
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
	// Requests is Successes + Failures (+ Rejected for Adaptive); ignored
	// calls are not counted.
	Requests uint64 `json:"requests"`
	// Successes in the window (ErrorRate, Adaptive) or successful probes
	// (half-open).
	Successes uint64 `json:"successes"`
	// Failures in the window, slow calls included (ErrorRate, Adaptive), or
	// failed probes (half-open).
	Failures uint64 `json:"failures"`
	// Rejected is how many calls the adaptive throttle turned away in the
	// window (Adaptive).
	Rejected uint64 `json:"rejected,omitempty"`
	// ConsecutiveFailures since the last success (ConsecutiveFailures).
	ConsecutiveFailures uint64 `json:"consecutiveFailures,omitempty"`
	// SlowCalls in the window that succeeded but took longer than
	// Settings.SlowCallThreshold (CountWindow with SlowPercent).
	SlowCalls uint64 `json:"slowCalls,omitempty"`
}

// countingRule is a rule of this package whose window counts in totals it
// is given. The breaker gives it its own lifetime counts (successes,
// failures, rejections), so that a success is counted once, by one atomic
// add, for the window and for the lifetime at once.
type countingRule interface {
	Rule
	newWindowOver(t *rolling.Totals, c clock.Clock) (Window, *outcomes)
}

// The slots of the counts of a rolling rule's window and of a breaker.
const (
	slotSuccesses = iota
	slotFailures
	slotRejected
)

// reconfigurable is a window that can adopt the thresholds of rule r while
// keeping its counts. It reports false if r is a different kind of rule or
// changes the window's shape (span or buckets).
type reconfigurable interface {
	reconfigure(r Rule) bool
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
	w := &consecutiveWindow{}
	w.threshold.Store(uint64(r.threshold()))
	return w
}

func (r ConsecutiveFailures) threshold() int {
	if r.Threshold <= 0 {
		return 5
	}
	return r.Threshold
}

type consecutiveWindow struct {
	threshold atomic.Uint64
	failures  atomic.Uint64
}

func (w *consecutiveWindow) Success() {
	// Read before writing: while all goes well the cache line stays shared
	// between cores instead of bouncing on every call.
	if w.failures.Load() != 0 {
		w.failures.Store(0)
	}
}

func (w *consecutiveWindow) Failure() bool { return w.failures.Add(1) >= w.threshold.Load() }

func (w *consecutiveWindow) Counts() Counts {
	return Counts{ConsecutiveFailures: w.failures.Load()}
}

func (w *consecutiveWindow) reconfigure(r Rule) bool {
	c, ok := r.(ConsecutiveFailures)
	if ok {
		w.threshold.Store(uint64(c.threshold()))
	}
	return ok
}

// ErrorRate trips when, over a rolling window, at least MinRequests calls
// were counted and at least Percent of them failed (hystrix semantics:
// circuitBreaker.requestVolumeThreshold and errorThresholdPercentage over
// metrics.rollingStats). The window is a ring of Buckets time buckets
// covering Window, aligned on the moment the breaker closed; the oldest
// bucket is dropped as time moves on, so the window covers between
// Window − Window/Buckets and Window of history.
//
// Counts fills Requests, Successes and Failures. Under concurrency a count
// landing exactly as a bucket turns over may be attributed to the
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
	w, _ := r.newWindowOver(new(rolling.Totals), c)
	return w
}

func (r ErrorRate) newWindowOver(t *rolling.Totals, c clock.Clock) (Window, *outcomes) {
	r = r.withDefaults()
	w := &errorRateWindow{outcomes: newOutcomes(t, c, r.Window, r.Buckets)}
	w.minRequests.Store(uint64(r.MinRequests))
	w.percent.Store(uint64(r.Percent))
	return w, w.outcomes
}

func (r ErrorRate) withDefaults() ErrorRate {
	r.Window, r.Buckets = windowShape(r.Window, r.Buckets)
	if r.MinRequests <= 0 {
		r.MinRequests = 20
	}
	if r.Percent <= 0 {
		r.Percent = 50
	}
	r.Percent = min(r.Percent, 100)
	return r
}

// windowShape applies the defaults and limits shared by the rolling rules.
func windowShape(span time.Duration, buckets int) (time.Duration, int) {
	if span <= 0 {
		span = 10 * time.Second
	}
	if buckets <= 0 {
		buckets = 10
	}
	return span, min(buckets, 1000, max(int(span/time.Millisecond), 1))
}

// outcomes is the rolling window of the error-rate and adaptive rules:
// successes, failures and rejections per bucket.
type outcomes struct {
	*rolling.Window
	span    time.Duration
	buckets int
}

func newOutcomes(t *rolling.Totals, c clock.Clock, span time.Duration, buckets int) *outcomes {
	return &outcomes{Window: rolling.Over(t, c, span, buckets), span: span, buckets: buckets}
}

func (w *outcomes) Success() { w.Add(slotSuccesses, 1) }

func (w *outcomes) Counts() Counts {
	sum := w.Sum()
	s, f, r := uint64(sum[slotSuccesses]), uint64(sum[slotFailures]), uint64(sum[slotRejected])
	return Counts{Requests: s + f + r, Successes: s, Failures: f, Rejected: r}
}

func (w *outcomes) sameShape(span time.Duration, buckets int) bool {
	return span == w.span && buckets == w.buckets
}

type errorRateWindow struct {
	*outcomes
	minRequests atomic.Uint64
	percent     atomic.Uint64
}

func (w *errorRateWindow) Failure() bool {
	w.Add(slotFailures, 1)
	c := w.Counts()
	return c.Requests >= w.minRequests.Load() && c.Failures*100 >= w.percent.Load()*c.Requests
}

func (w *errorRateWindow) reconfigure(r Rule) bool {
	e, ok := r.(ErrorRate)
	if !ok {
		return false
	}
	e = e.withDefaults()
	if !w.sameShape(e.Window, e.Buckets) {
		return false
	}
	w.minRequests.Store(uint64(e.MinRequests))
	w.percent.Store(uint64(e.Percent))
	return true
}

// Defaults of the Adaptive fields left zero.
const (
	// DefaultProtection is go-zero's protection: the throttle rejects
	// nothing while the window holds no more than this many requests
	// beyond those K times the accepts cover.
	DefaultProtection = 5
	// DefaultMaxRejectRate lets at least one call in ten reach the backend
	// however badly it fails, so that the throttle sees it recover.
	DefaultMaxRejectRate = 0.9
)

// Adaptive is client-side adaptive throttling, from Google's SRE book
// (Beyer et al., "Site Reliability Engineering", 2016, chapter 21,
// "Handling Overload", section "Client-side throttling"), as in go-zero's
// core/breaker. It has no open state: the breaker stays closed and rejects
// each call, with ErrThrottled, with probability
//
//	min(MaxRejectRate, max(0, (requests − Protection − K·accepts) / (requests + 1)))
//
// where, over the rolling window, requests counts every call asked of the
// breaker (admitted or rejected; ignored outcomes aside) and accepts those
// that succeeded. While the backend accepts more than 1/K of the requests
// nothing is rejected; as it fails, the client sheds the excess locally
// before it costs the backend anything, and still lets a growing share
// through as the backend recovers. K = 2 lets through about twice what the
// backend accepts; a lower K throttles sooner and harder.
//
// The book's formula has no Protection term: with it, as in go-zero, a
// handful of failures (three requests, none accepted) reject nothing,
// where the bare formula would reject half the calls after a single
// failure. MaxRejectRate caps the rejection probability, so that some
// calls always reach a backend that rejects everything and the throttle
// learns when it is back.
//
// The random draw uses Settings.Rand. Counts fills Requests, Successes,
// Failures and Rejected. Failure never trips, so the breaker opens only if
// forced.
type Adaptive struct {
	// K is the multiplier of accepts. Zero or less means 2; values below 1
	// reject even a healthy backend's calls and are raised to 1.
	K float64
	// Protection is how many requests beyond K·accepts the window may hold
	// before anything is rejected. Zero means DefaultProtection; below zero
	// means none (the book's formula).
	Protection int
	// MaxRejectRate caps the probability of rejecting a call. Zero or less
	// means DefaultMaxRejectRate; above 1 means 1 (no cap).
	MaxRejectRate float64
	// Window is the span of history judged. Zero or less means 10 s.
	Window time.Duration
	// Buckets is how many slices the window is cut into. Zero or less means
	// 10; at most 1000; the bucket width is at least 1 ms.
	Buckets int
}

// NewWindow implements Rule.
func (r Adaptive) NewWindow(c clock.Clock) Window {
	w, _ := r.newWindowOver(new(rolling.Totals), c)
	return w
}

func (r Adaptive) newWindowOver(t *rolling.Totals, c clock.Clock) (Window, *outcomes) {
	r = r.withDefaults()
	w := &throttleWindow{outcomes: newOutcomes(t, c, r.Window, r.Buckets)}
	w.rule.Store(&r)
	return w, w.outcomes
}

func (r Adaptive) withDefaults() Adaptive {
	r.Window, r.Buckets = windowShape(r.Window, r.Buckets)
	if r.K <= 0 || math.IsNaN(r.K) {
		r.K = 2
	}
	r.K = max(r.K, 1)
	switch {
	case r.Protection == 0:
		r.Protection = DefaultProtection
	case r.Protection < 0:
		r.Protection = 0
	}
	if !(r.MaxRejectRate > 0) {
		r.MaxRejectRate = DefaultMaxRejectRate
	}
	r.MaxRejectRate = min(r.MaxRejectRate, 1)
	return r
}

// RejectProbability returns the probability of rejecting the next call
// given the counts of the window (the formula above).
func (r Adaptive) RejectProbability(c Counts) float64 {
	r = r.withDefaults()
	return r.rejectProbability(c)
}

// rejectProbability is RejectProbability for r with its defaults applied.
func (r *Adaptive) rejectProbability(c Counts) float64 {
	req := float64(c.Requests)
	p := (req - float64(r.Protection) - r.K*float64(c.Successes)) / (req + 1)
	return min(max(p, 0), r.MaxRejectRate)
}

type throttleWindow struct {
	*outcomes
	rule atomic.Pointer[Adaptive] // with its defaults applied
}

func (w *throttleWindow) Failure() bool {
	w.Add(slotFailures, 1)
	return false
}

// admit decides whether a call may run; draw returns a uniform number in
// [0, 1). A rejection is counted in the window.
func (w *throttleWindow) admit(draw func() float64) bool {
	p := w.rule.Load().rejectProbability(w.Counts())
	if p <= 0 || draw() >= p {
		return true
	}
	w.Add(slotRejected, 1)
	return false
}

func (w *throttleWindow) reconfigure(r Rule) bool {
	a, ok := r.(Adaptive)
	if !ok {
		return false
	}
	a = a.withDefaults()
	if !w.sameShape(a.Window, a.Buckets) {
		return false
	}
	w.rule.Store(&a)
	return true
}
