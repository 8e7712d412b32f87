package circuitbreaker

import (
	"math"
	"sync/atomic"
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
}

// builtinRule is implemented by the rules of this package: their windows
// count successes in the breaker's own striped counter, so that the success
// path writes one counter, not two, and they can take new thresholds
// without losing their counts (see reconfigurable).
type builtinRule interface {
	Rule
	newWindow(c clock.Clock, successes *counter) Window
}

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
func (r ConsecutiveFailures) NewWindow(c clock.Clock) Window { return r.newWindow(c, nil) }

func (r ConsecutiveFailures) newWindow(clock.Clock, *counter) Window {
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
	failures  paddedUint64
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
func (r ErrorRate) NewWindow(c clock.Clock) Window { return r.newWindow(c, newCounter()) }

func (r ErrorRate) newWindow(c clock.Clock, successes *counter) Window {
	r = r.withDefaults()
	w := &errorRateWindow{rolling: newRolling(c, r.Window, r.Buckets, successes)}
	w.minRequests.Store(uint64(r.MinRequests))
	w.percent.Store(uint64(r.Percent))
	return w
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

type errorRateWindow struct {
	*rolling
	minRequests atomic.Uint64
	percent     atomic.Uint64
}

func (w *errorRateWindow) Failure() bool {
	w.tick()
	w.failures.Add(1)
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

// Adaptive is client-side adaptive throttling, from Google's SRE book
// (Beyer et al., "Site Reliability Engineering", 2016, chapter 21,
// "Handling Overload", section "Client-side throttling"), as in go-zero's
// core/breaker. It has no open state: the breaker stays closed and rejects
// each call, with ErrThrottled, with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// where, over the rolling window, requests counts every call asked of the
// breaker (admitted or rejected; ignored outcomes aside) and accepts those
// that succeeded. While the backend accepts more than 1/K of the requests
// nothing is rejected; as it fails, the client sheds the excess locally
// before it costs the backend anything, and still lets a growing share
// through as the backend recovers. K = 2 lets through about twice what the
// backend accepts; a lower K throttles sooner and harder.
//
// The random draw uses Settings.Rand. Counts fills Requests, Successes,
// Failures and Rejected. Failure never trips, so the breaker opens only if
// forced.
type Adaptive struct {
	// K is the multiplier of accepts. Zero or less means 2; values below 1
	// reject even a healthy backend's calls and are raised to 1.
	K float64
	// Window is the span of history judged. Zero or less means 10 s.
	Window time.Duration
	// Buckets is how many slices the window is cut into. Zero or less means
	// 10; at most 1000; the bucket width is at least 1 ms.
	Buckets int
}

// NewWindow implements Rule.
func (r Adaptive) NewWindow(c clock.Clock) Window { return r.newWindow(c, newCounter()) }

func (r Adaptive) newWindow(c clock.Clock, successes *counter) Window {
	r = r.withDefaults()
	w := &throttleWindow{rolling: newRolling(c, r.Window, r.Buckets, successes)}
	w.k.Store(math.Float64bits(r.K))
	return w
}

func (r Adaptive) withDefaults() Adaptive {
	r.Window, r.Buckets = windowShape(r.Window, r.Buckets)
	if r.K <= 0 || math.IsNaN(r.K) {
		r.K = 2
	}
	r.K = max(r.K, 1)
	return r
}

// RejectProbability returns the SRE formula's probability of rejecting the
// next call given the counts of the window.
func (r Adaptive) RejectProbability(c Counts) float64 {
	return rejectProbability(r.withDefaults().K, c)
}

func rejectProbability(k float64, c Counts) float64 {
	req := float64(c.Requests)
	return max(0, (req-k*float64(c.Successes))/(req+1))
}

type throttleWindow struct {
	*rolling
	k atomic.Uint64 // float64 bits
}

func (w *throttleWindow) Failure() bool {
	w.tick()
	w.failures.Add(1)
	return false
}

// admit decides whether a call may run; draw returns a uniform number in
// [0, 1). A rejection is counted in the window.
func (w *throttleWindow) admit(draw func() float64) bool {
	p := rejectProbability(math.Float64frombits(w.k.Load()), w.Counts())
	if p <= 0 || draw() >= p {
		return true
	}
	w.rejected.Add(1)
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
	w.k.Store(math.Float64bits(a.K))
	return true
}

// rolling counts over a ring of time buckets without ever clearing a
// counter. The totals (successes, failures, rejections) only grow; at each
// bucket boundary the ring records the totals of that moment (a mark), and
// the window's counts are the totals now minus the mark at the start of the
// oldest bucket still in the window. Writers therefore add to one counter
// and nothing else; the bucket turns over lazily, on the first call that
// sees the clock pass next. A success does not read the clock for that: a
// timer on the clock sets due when the live bucket ends, and a success
// that finds due set turns the buckets (failures and Counts read the clock
// themselves). A timer that fires late attributes the successes in between
// to the bucket that ended; one that fires after the buckets turned
// otherwise does nothing.
type rolling struct {
	clock   clock.Clock
	coarse  *clock.Coarse // clock, when coarse: read without an interface call
	width   int64         // of a bucket, in nanoseconds
	buckets int
	span    time.Duration

	due  paddedBool  // the live bucket has ended (set by a timer; see turn)
	next paddedInt64 // Nanotime at which the live bucket ends

	successes *counter // shared with the breaker: every success of this closed period
	failures  paddedUint64
	rejected  paddedUint64

	// start is the mark of the oldest bucket in the window.
	startSuccesses, startFailures, startRejected atomic.Uint64

	turning paddedMutex // held by the caller turning the buckets; guards live and marks
	live    int
	marks   []mark
}

type mark struct{ successes, failures, rejected uint64 }

func newRolling(c clock.Clock, span time.Duration, buckets int, successes *counter) *rolling {
	coarse, _ := c.(*clock.Coarse)
	w := &rolling{
		clock: c, coarse: coarse, span: span, buckets: buckets,
		width:     int64(span) / int64(buckets),
		successes: successes,
		marks:     make([]mark, buckets),
	}
	m := w.totals()
	for i := range w.marks {
		w.marks[i] = m
	}
	w.setStart(m)
	now := c.Nanotime()
	w.next.Store(now + w.width)
	w.arm(now+w.width, now)
	return w
}

// arm sets a timer that marks the window due when the clock, now at now,
// reaches at, unless the buckets have turned past at by then.
func (w *rolling) arm(at, now int64) {
	w.clock.AfterFunc(time.Duration(at-now), func() {
		if w.next.Load() == at {
			w.due.Store(true)
		}
	})
}

func (w *rolling) sameShape(span time.Duration, buckets int) bool {
	return span == w.span && buckets == w.buckets
}

func (w *rolling) nanotime() int64 {
	if c := w.coarse; c != nil {
		return c.Nanotime()
	}
	return w.clock.Nanotime()
}

// tick turns the buckets if the live one has ended.
func (w *rolling) tick() {
	if now := w.nanotime(); now >= w.next.Load() {
		w.turn(now)
	}
}

// Success records a success when the window is used on its own; a breaker
// adds to the shared counter itself.
func (w *rolling) Success() {
	if w.due.Load() {
		w.tick()
	}
	w.successes.inc()
}

func (w *rolling) Counts() Counts {
	w.tick()
	// Marks first: the totals read after them can only be larger, so the
	// differences never wrap.
	s0, f0, r0 := w.startSuccesses.Load(), w.startFailures.Load(), w.startRejected.Load()
	s, f, r := w.successes.load()-s0, w.failures.Load()-f0, w.rejected.Load()-r0
	return Counts{Requests: s + f + r, Successes: s, Failures: f, Rejected: r}
}

func (w *rolling) totals() mark {
	return mark{w.successes.load(), w.failures.Load(), w.rejected.Load()}
}

func (w *rolling) setStart(m mark) {
	w.startSuccesses.Store(m.successes)
	w.startFailures.Store(m.failures)
	w.startRejected.Store(m.rejected)
}

// turn moves the live bucket forward to the one holding now. One caller
// turns; the others go on counting meanwhile, which attributes their counts
// to the bucket that is starting (they happen after its boundary) or, at
// worst, to the one that just ended.
func (w *rolling) turn(now int64) {
	if !w.turning.TryLock() {
		return
	}
	defer w.turning.Unlock()
	next := w.next.Load()
	if now < next {
		return
	}
	steps := (now-next)/w.width + 1
	m := w.totals()
	for range min(steps, int64(w.buckets)) {
		w.live = (w.live + 1) % w.buckets
		w.marks[w.live] = m
	}
	w.setStart(w.marks[(w.live+1)%w.buckets])
	next += steps * w.width
	w.next.Store(next)
	w.due.Store(false)
	w.arm(next, now)
}
