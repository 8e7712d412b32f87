package retry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// Defaults of the BudgetSettings fields left zero.
const (
	DefaultBudgetRatio   = 0.1
	DefaultBudgetMin     = 10
	DefaultBudgetWindow  = 10 * time.Second
	DefaultBudgetBuckets = 10
)

// BudgetSettings configures a Budget. The zero value lets retries add 10 %
// to the calls of the last 10 s, plus 10 retries.
//
// Ratio is the share of calls that may be retried: 0.1 lets retries add at
// most 10 % to the traffic a dependency sees. Zero or less means
// DefaultBudgetRatio.
//
// MinRetries is how many retries the window allows whatever the traffic, so
// that a service with few calls can still retry some. Zero means
// DefaultBudgetMin; below zero means none.
//
// Window is the rolling window calls and retries are counted over, and
// Buckets how many parts it moves by (the window is rounded down to a
// whole number of nanoseconds per bucket). Zero or less means
// DefaultBudgetWindow and DefaultBudgetBuckets.
//
// Clock is the time source. Nil means clock.Default(); tests pass a
// *clock.Fake.
type BudgetSettings struct {
	Ratio      float64
	MinRetries int
	Window     time.Duration
	Buckets    int
	Clock      clock.Clock
}

// Budget caps retries to a share of calls over a rolling window, as
// Finagle's RetryBudget and gRPC's retry throttling do: when a dependency
// fails, its callers retry at most Ratio more calls than they make, not
// MaxAttempts times as many. Share one Budget among every Retry that calls
// the same dependency. It is safe for concurrent use.
//
// The rule: a retry is allowed only if, counting it, the retries allowed in
// the last Window are at most Ratio × the calls begun in the last Window,
// plus MinRetries. A retry counts when it is allowed, before its backoff. The counts are kept in Buckets parts and rounded to the
// safe side (calls over the last Window less up to one bucket, retries over
// the last Window plus up to one), so that the rule holds for the exact
// window ending at every retry.
type Budget struct {
	ratio    float64
	min      float64
	width    int64 // of a bucket, nanoseconds
	clock    clock.Clock
	buckets  []budgetBucket // n+1 of them: retries are counted over one more
	n        int64
	mu       sync.Mutex // serialises retries and the reuse of buckets
	rejected atomic.Uint64
}

type budgetBucket struct {
	epoch   atomic.Int64 // the bucket number it counts for; -1 when never used
	calls   atomic.Int64
	retries atomic.Int64
}

// BudgetSnapshot is the state of a Budget, for metrics.
type BudgetSnapshot struct {
	Calls    int64   // calls begun in the window
	Retries  int64   // retries begun in the window
	Ratio    float64 // Settings.Ratio
	Rejected uint64  // retries refused, since creation
}

// NewBudget returns a Budget with the given settings (see BudgetSettings
// for the defaults of zero fields).
func NewBudget(s BudgetSettings) *Budget {
	if s.Ratio <= 0 {
		s.Ratio = DefaultBudgetRatio
	}
	switch {
	case s.MinRetries == 0:
		s.MinRetries = DefaultBudgetMin
	case s.MinRetries < 0:
		s.MinRetries = 0
	}
	if s.Window <= 0 {
		s.Window = DefaultBudgetWindow
	}
	if s.Buckets <= 0 {
		s.Buckets = DefaultBudgetBuckets
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	b := &Budget{
		ratio:   s.Ratio,
		min:     float64(s.MinRetries),
		width:   max(int64(s.Window)/int64(s.Buckets), 1),
		clock:   s.Clock,
		buckets: make([]budgetBucket, s.Buckets+1),
		n:       int64(s.Buckets),
	}
	for i := range b.buckets {
		b.buckets[i].epoch.Store(-1)
	}
	return b
}

// bucket returns the bucket counting for bucket number k, made ready for it.
func (b *Budget) bucket(k int64) *budgetBucket {
	bk := &b.buckets[k%int64(len(b.buckets))]
	if bk.epoch.Load() != k {
		b.mu.Lock()
		b.reuse(bk, k)
		b.mu.Unlock()
	}
	return bk
}

// reuse clears bk for bucket number k if it counts for an earlier one. The
// caller holds b.mu.
func (b *Budget) reuse(bk *budgetBucket, k int64) {
	if e := bk.epoch.Load(); e < k {
		bk.calls.Store(0)
		bk.retries.Store(0)
		bk.epoch.Store(k)
	}
}

// call counts a call begun at now.
func (b *Budget) call(now int64) {
	b.bucket(now / b.width).calls.Add(1)
}

// retry takes one retry at now from the budget, if it allows one.
func (b *Budget) retry(now int64) bool {
	k := now / b.width
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, retries := b.counts(k)
	if float64(retries+1) > b.ratio*float64(calls)+b.min {
		b.rejected.Add(1)
		return false
	}
	bk := &b.buckets[k%int64(len(b.buckets))]
	b.reuse(bk, k)
	bk.retries.Add(1)
	return true
}

// counts returns the calls of buckets k-n+1…k (all inside the Window that
// ends now) and the retries of buckets k-n…k (all of that Window and more).
func (b *Budget) counts(k int64) (calls, retries int64) {
	for i := range b.buckets {
		bk := &b.buckets[i]
		e := bk.epoch.Load()
		if e > k || e < k-b.n {
			continue
		}
		retries += bk.retries.Load()
		if e > k-b.n {
			calls += bk.calls.Load()
		}
	}
	return calls, retries
}

// Snapshot returns the budget's counts now.
func (b *Budget) Snapshot() BudgetSnapshot {
	b.mu.Lock()
	calls, retries := b.counts(b.clock.Nanotime() / b.width)
	b.mu.Unlock()
	return BudgetSnapshot{Calls: calls, Retries: retries, Ratio: b.ratio, Rejected: b.rejected.Load()}
}
