package retry

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/rolling"
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
// plus MinRetries. A retry counts when it is allowed, before its backoff.
// The counts are kept in buckets of Window/Buckets and rounded to the safe
// side (calls over the last Window less up to one bucket, retries over the
// last Window plus up to one), so that the rule holds for the exact window
// ending at every retry.
type Budget struct {
	ratio    float64
	min      float64
	n        int             // Settings.Buckets
	window   *rolling.Window // n+1 buckets: retries are counted over one more
	mu       sync.Mutex      // serialises retries: the check and the count
	rejected atomic.Uint64
}

// The slots of a Budget's window.
const (
	slotCalls = iota
	slotRetries
)

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
	width := max(s.Window/time.Duration(s.Buckets), 1)
	return &Budget{
		ratio:  s.Ratio,
		min:    float64(s.MinRetries),
		n:      s.Buckets,
		window: rolling.New(s.Clock, width*time.Duration(s.Buckets+1), s.Buckets+1),
	}
}

// call counts a call begun now.
func (b *Budget) call() { b.window.Add(slotCalls, 1) }

// CountCall counts a call begun now, for a policy other than Retry that
// shares the budget (a hedge.Hedge used without a Retry).
func (b *Budget) CountCall() { b.call() }

// TakeExtra takes one extra attempt from the budget (a hedge sends one),
// as a retry does, and reports whether the budget allowed it. Retries and
// hedges that share a Budget share its Ratio: one cap on all the extra
// traffic the dependency sees.
func (b *Budget) TakeExtra() bool { return b.retry() }

// retry takes one retry from the budget, if it allows one.
func (b *Budget) retry() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	calls, retries := b.counts()
	if float64(retries+1) > b.ratio*float64(calls)+b.min {
		b.rejected.Add(1)
		return false
	}
	b.window.Add(slotRetries, 1)
	return true
}

// counts returns the calls of the newest n buckets (all inside the Window
// that ends now) and the retries of all n+1 (all of that Window and more).
func (b *Budget) counts() (calls, retries int64) {
	b.window.Reduce(func(age int, c rolling.Counts) {
		if age < b.n {
			calls += c[slotCalls]
		}
		retries += c[slotRetries]
	})
	return calls, retries
}

// Snapshot returns the budget's counts now.
func (b *Budget) Snapshot() BudgetSnapshot {
	b.mu.Lock()
	calls, retries := b.counts()
	b.mu.Unlock()
	return BudgetSnapshot{Calls: calls, Retries: retries, Ratio: b.ratio, Rejected: b.rejected.Load()}
}
