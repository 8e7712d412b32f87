// Package retry tries a failed call again, with exponential backoff and
// full jitter, within a number of attempts and a time, and within a retry
// budget shared by every caller of a dependency, so that a dependency that
// fails never sees a retry storm.
//
// The wait before attempt n+1 is, as in "Exponential Backoff And Jitter"
// (Marc Brooker, AWS Architecture Blog, 2015), full jitter:
//
//	wait = random in [0, min(MaxBackoff, Backoff × Multiplier^(n-1)))
//
// or longer if the error asks for it: an error that carries a Retry-After
// (an *AfterError, or any error with a RetryAfter() time.Duration method,
// found with errors.As) is not tried again before that. No attempt starts
// after MaxElapsed since the first, nor after the context's deadline: Next
// gives up at once rather than wait for an attempt that could not start.
//
// A Retry is a breakerimpl.Retrier, so it goes in a breakerimpl.Pipeline,
// inside the breaker (which thus sees one outcome per call) and the
// timeout (which bounds the retries and their waits).
package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// Defaults of the Settings fields left zero.
const (
	DefaultMaxAttempts = 3
	DefaultBackoff     = 100 * time.Millisecond
	DefaultMaxBackoff  = 10 * time.Second
	DefaultMultiplier  = 2.0
)

// Settings configures a Retry. The zero value makes up to three attempts
// with full-jitter backoff from 100 ms, and no budget.
//
// Name names the retry in events and snapshots. It may be empty.
//
// MaxAttempts is how many attempts a call gets in all, the first included:
// 1 means never retry. Zero or less means DefaultMaxAttempts.
//
// MaxElapsed bounds the time from the start of the first attempt to the
// start of the last: a retry that would start later is not made. Zero or
// less means no bound but the context's deadline.
//
// Backoff is the base of the exponential backoff, Multiplier its growth per
// attempt and MaxBackoff its cap (before jitter). Zero or less means
// DefaultBackoff, DefaultMultiplier and DefaultMaxBackoff; a Multiplier
// below 1 is taken as 1.
//
// Jitter is the share of each wait drawn at random: 1 is full jitter, a
// wait anywhere in [0, ceiling); 0.5 draws it in [ceiling/2, ceiling); zero
// means 1. A negative Jitter means none: every wait is the ceiling.
//
// Retryable decides which errors are worth another attempt; nil means
// DefaultRetryable. It is not asked when the call's context has ended.
//
// Budget caps retries to a share of all calls; nil means no cap. Several
// Retry values (say, one per endpoint of a dependency) may share a Budget.
//
// AttemptTimeout bounds each attempt on its own (an attempt that times out
// fails with timeout.ErrTimeout, retryable by default). Zero or less means
// none: only the call's context bounds it.
//
// Rand returns a random int64 in [0, n); it draws the jitter. Nil means
// math/rand/v2's Int64N. It must be safe for concurrent use if the Retry
// is; tests pass the Int64N of a seeded *rand.Rand.
//
// OnEvent is called for every retry and every call that gives up after a
// failed attempt, on the caller's goroutine. Nil means no one is told.
//
// Clock times the waits and MaxElapsed. Nil means clock.Default(); tests
// pass a *clock.Fake.
type Settings struct {
	Name           string
	MaxAttempts    int
	MaxElapsed     time.Duration
	Backoff        time.Duration
	MaxBackoff     time.Duration
	Multiplier     float64
	Jitter         float64
	Retryable      func(error) bool
	Budget         *Budget
	AttemptTimeout time.Duration
	Rand           func(n int64) int64
	OnEvent        func(Event)
	Clock          clock.Clock
}

// EventKind says what happened.
type EventKind string

// The events a Retry publishes.
const (
	// Retrying: an attempt failed and another follows after Wait.
	Retrying EventKind = "retrying"
	// GaveUp: an attempt failed and the call ends with its error, for the
	// reason in Why.
	GaveUp EventKind = "gave-up"
)

// Why a call gave up.
const (
	WhyNotRetryable = "not-retryable"
	WhyAttempts     = "max-attempts"
	WhyElapsed      = "max-elapsed"
	WhyDeadline     = "deadline"
	WhyBudget       = "budget"
	WhyContext      = "context"
)

// Event is published to Settings.OnEvent.
type Event struct {
	Name    string
	Kind    EventKind
	Attempt int           // the attempt that failed, from 1
	Err     error         // its error
	Wait    time.Duration // Retrying: the wait before the next attempt
	Why     string        // GaveUp: one of the Why constants
}

// String describes the event on one line, for logs and %v, as in "retry
// recs: attempt 1 failed (EOF); retrying in 150ms" or "retry recs: attempt
// 3 failed (EOF); gave up: max-attempts".
func (e Event) String() string {
	name := ""
	if e.Name != "" {
		name = " " + e.Name
	}
	s := fmt.Sprintf("retry%s: attempt %d failed (%v); ", name, e.Attempt, e.Err)
	if e.Kind == Retrying {
		return s + "retrying in " + e.Wait.String()
	}
	return s + "gave up: " + e.Why
}

// Snapshot is the state of a Retry, for metrics.
type Snapshot struct {
	Name           string
	Retries        uint64         // retries made, since creation
	GaveUp         uint64         // calls that ended with an error after a failed attempt
	BudgetDenied   uint64         // retries the budget refused
	BudgetWindow   BudgetSnapshot // the Budget's, when there is one
	MaxAttempts    int
	AttemptTimeout time.Duration // Settings.AttemptTimeout; zero for none
}

// Retry decides about retries. Make one with New; it is safe for
// concurrent use.
type Retry struct {
	name        string
	tune        atomic.Pointer[tuning] // what Update may change
	retryable   func(error) bool
	budget      *Budget
	attemptTime *timeout.Timeout
	rand        func(int64) int64
	onEvent     func(Event)
	clock       clock.Clock

	retries      atomic.Uint64
	gaveUp       atomic.Uint64
	budgetDenied atomic.Uint64
}

// tuning is the part of a Retry's settings that Update changes, replaced
// whole so that a call never sees half of an update.
type tuning struct {
	maxAttempts int
	maxElapsed  int64
	backoff     float64 // nanoseconds
	maxBackoff  float64
	multiplier  float64
	jitter      float64 // in [0, 1]
	settings    Settings
}

// newTuning applies the defaults of zero fields to the tunable fields of s.
func newTuning(s Settings) *tuning {
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = DefaultMaxAttempts
	}
	if s.Backoff <= 0 {
		s.Backoff = DefaultBackoff
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	if s.Multiplier <= 0 {
		s.Multiplier = DefaultMultiplier
	}
	if s.Jitter == 0 {
		s.Jitter = 1
	}
	return &tuning{
		maxAttempts: s.MaxAttempts,
		maxElapsed:  int64(max(s.MaxElapsed, 0)),
		backoff:     float64(s.Backoff),
		maxBackoff:  float64(s.MaxBackoff),
		multiplier:  max(s.Multiplier, 1),
		jitter:      min(max(s.Jitter, 0), 1),
		settings:    s,
	}
}

// New returns a Retry with the given settings (see Settings for the
// defaults of zero fields).
func New(s Settings) *Retry {
	if s.Retryable == nil {
		s.Retryable = DefaultRetryable
	}
	if s.Rand == nil {
		s.Rand = rand.Int64N
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	r := &Retry{
		name:      s.Name,
		retryable: s.Retryable,
		budget:    s.Budget,
		rand:      s.Rand,
		onEvent:   s.OnEvent,
		clock:     s.Clock,
	}
	r.tune.Store(newTuning(s))
	if s.AttemptTimeout > 0 {
		r.attemptTime = timeout.New(timeout.Settings{Name: s.Name, Timeout: s.AttemptTimeout, Clock: s.Clock})
	}
	return r
}

// Settings returns the settings in force, with the defaults of zero
// fields filled in.
func (r *Retry) Settings() Settings { return r.tune.Load().settings }

// Update changes the settings at run time: change edits a copy of the
// settings in force. MaxAttempts, MaxElapsed, Backoff, MaxBackoff,
// Multiplier and Jitter take effect for the next decision of every call,
// calls under way included; edits to the other fields are ignored. The
// counts (retries, give-ups, the budget's window) are kept.
func (r *Retry) Update(change func(*Settings)) {
	s := r.tune.Load().settings
	change(&s)
	r.tune.Store(newTuning(s))
}

// Begin starts a call: it counts it in the budget and returns its first
// Attempt.
func (r *Retry) Begin(context.Context) breakerimpl.Attempt {
	if r.budget != nil {
		r.budget.call()
	}
	return breakerimpl.Attempt{N: 1, Start: r.clock.Nanotime()}
}

// AttemptLimit returns the timeout of each attempt, or nil.
func (r *Retry) AttemptLimit() breakerimpl.TimeLimit {
	if r.attemptTime == nil {
		return nil
	}
	return r.attemptTime
}

// Next is given the error of attempt a. It returns the next Attempt with a
// nil error after waiting for the backoff, or err when the call should end:
// err is not retryable, the attempts, the elapsed time or the budget are
// spent, or the next attempt could not start before the context's deadline.
// If ctx ends during the wait, Next returns err at once.
func (r *Retry) Next(ctx context.Context, a breakerimpl.Attempt, err error) (breakerimpl.Attempt, error) {
	wait, why := r.decide(ctx, a, err)
	if why != "" {
		r.gaveUp.Add(1)
		if why == WhyBudget {
			r.budgetDenied.Add(1)
		}
		r.publish(Event{Kind: GaveUp, Attempt: a.N, Err: err, Why: why})
		return a, err
	}
	r.retries.Add(1)
	r.publish(Event{Kind: Retrying, Attempt: a.N, Err: err, Wait: wait})
	if clock.Sleep(ctx, r.clock, wait) != nil {
		return a, err
	}
	return breakerimpl.Attempt{N: a.N + 1, Start: a.Start}, nil
}

// decide returns the wait before the attempt after a, or why there is
// none. A retry it allows is taken from the budget.
func (r *Retry) decide(ctx context.Context, a breakerimpl.Attempt, err error) (time.Duration, string) {
	t := r.tune.Load()
	switch {
	case ctx.Err() != nil:
		return 0, WhyContext
	case !r.retryable(err):
		return 0, WhyNotRetryable
	case a.N >= t.maxAttempts:
		return 0, WhyAttempts
	}
	wait := r.backoffOf(t, a.N)
	if after, ok := RetryAfter(err); ok && after > wait {
		wait = after
	}
	now := r.clock.Nanotime()
	if t.maxElapsed > 0 && now+int64(wait)-a.Start > t.maxElapsed {
		return 0, WhyElapsed
	}
	if dl, ok := ctx.Deadline(); ok && !r.clock.Now().Add(wait).Before(dl) {
		return 0, WhyDeadline
	}
	if r.budget != nil && !r.budget.retry() {
		return 0, WhyBudget
	}
	return wait, ""
}

// Backoff returns a jittered wait after failed attempt n (from 1): with
// full jitter (the default), random in [0, min(MaxBackoff, Backoff ×
// Multiplier^(n-1))); with a Jitter j, the ceiling's last share j is drawn
// at random.
func (r *Retry) Backoff(n int) time.Duration { return r.backoffOf(r.tune.Load(), n) }

func (r *Retry) backoffOf(t *tuning, n int) time.Duration {
	ceiling := t.maxBackoff
	if n < 1 {
		n = 1
	}
	if exp := t.backoff * math.Pow(t.multiplier, float64(n-1)); exp < ceiling {
		ceiling = exp
	}
	if ceiling < 1 {
		return 0
	}
	fixed := ceiling * (1 - t.jitter)
	random := int64(ceiling - fixed)
	if random < 1 {
		return time.Duration(ceiling)
	}
	return time.Duration(int64(fixed) + r.rand(random))
}

func (r *Retry) publish(e Event) {
	if r.onEvent != nil {
		e.Name = r.name
		r.onEvent(e)
	}
}

// Snapshot returns the retry's counts now.
func (r *Retry) Snapshot() Snapshot {
	s := Snapshot{
		Name:         r.name,
		Retries:      r.retries.Load(),
		GaveUp:       r.gaveUp.Load(),
		BudgetDenied: r.budgetDenied.Load(),
		MaxAttempts:  r.tune.Load().maxAttempts,
	}
	if r.budget != nil {
		s.BudgetWindow = r.budget.Snapshot()
	}
	if r.attemptTime != nil {
		s.AttemptTimeout = r.attemptTime.Timeout()
	}
	return s
}

// Execute calls fn until it succeeds or r gives up, and returns the last
// attempt's result. A panic in fn is not retried: it goes on.
func Execute[T any](ctx context.Context, r *Retry, fn func(context.Context) (T, error)) (v T, err error) {
	a := r.Begin(ctx)
	for {
		if t := r.attemptTime; t != nil {
			actx := t.Begin(ctx)
			v, err = fn(actx)
			err = t.End(actx, err)
		} else {
			v, err = fn(ctx)
		}
		if err == nil {
			return v, nil
		}
		if a, err = r.Next(ctx, a, err); err != nil {
			return v, err
		}
	}
}

// DefaultRetryable retries every error but these: a panic
// (*breakerimpl.PanicError), an error marked with Permanent,
// context.Canceled, and a refusal by a policy (breakerimpl.ErrOpen,
// ErrHalfOpenFull, ErrRejected: the capacity it protects will not come
// back within a backoff). A timeout is retried (as long as the call's own
// context has not ended).
func DefaultRetryable(err error) bool {
	var pe *breakerimpl.PanicError
	var perm *permanentError
	switch {
	case errors.As(err, &pe), errors.As(err, &perm),
		errors.Is(err, context.Canceled),
		errors.Is(err, breakerimpl.ErrOpen),
		errors.Is(err, breakerimpl.ErrHalfOpenFull),
		errors.Is(err, breakerimpl.ErrRejected):
		return false
	}
	return true
}

// Permanent marks err as not worth retrying: DefaultRetryable says no to
// it. errors.Is and errors.As see through the mark.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (p *permanentError) Error() string { return p.err.Error() }
func (p *permanentError) Unwrap() error { return p.err }

// AfterError is an error that asks not to be retried before After has
// passed, as an HTTP 429 or 503 response with a Retry-After header does.
type AfterError struct {
	Err   error
	After time.Duration
}

// After returns err carrying a Retry-After of d.
func After(err error, d time.Duration) error { return &AfterError{Err: err, After: d} }

func (e *AfterError) Error() string {
	return e.Err.Error() + " (retry after " + e.After.String() + ")"
}

// Unwrap returns Err.
func (e *AfterError) Unwrap() error { return e.Err }

// RetryAfter returns After.
func (e *AfterError) RetryAfter() time.Duration { return e.After }

// RetryAfter finds, in err's chain, an error with a RetryAfter()
// time.Duration method (an *AfterError, for one) and returns its value.
func RetryAfter(err error) (time.Duration, bool) {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter(), true
	}
	return 0, false
}
