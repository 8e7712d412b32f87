package breakerimpl

import (
	"context"
	"errors"
	"time"
)

// SourcePrimary is the Source of a Result that the primary served.
const SourcePrimary = "primary"

// Result is a value and where it came from: the primary, or a fallback
// standing in for it, and why.
type Result[T any] struct {
	// Value is the served value; the zero value when the call failed.
	Value T
	// Source is SourcePrimary or the name of the fallback that served.
	Source string
	// Reason says why the primary did not serve (ReasonNone when it did).
	// It is also set when the call failed with no fallback to serve.
	Reason Reason
	// Age is how old a cached copy was when served (zero for fresh values).
	Age time.Duration
}

// Fallback serves a value when the primary cannot. The fallback package
// holds the strategies: a static value, a last-known-good cache, a
// function, and a chain of these.
//
// Implementations must be safe for concurrent use.
type Fallback[K comparable, T any] interface {
	// Remember is given every value the primary served for key (a cache
	// keeps it; others do nothing). It is on the success path: keep it
	// cheap and free of allocations for keys already seen.
	Remember(key K, v T)
	// Recover serves a value for key in place of the primary, which failed
	// with err. It sets the Result's Value, Source and Age; Pipeline sets
	// the Reason.
	Recover(ctx context.Context, key K, err error) (Result[T], error)
}

// Pipeline runs a call through policies in one fixed order, outermost first:
//
//	Fallback ∘ Shedder ∘ Limiter ∘ Degrade ∘ Breaker ∘ Bulkhead ∘ Timeout ∘ Retry ∘ Hedge ∘ fn
//
// (see the package doc for why this order). Every field may be nil: that
// policy is skipped. A Pipeline holds no state of its own, is safe for
// concurrent use, and may be copied.
//
// Each guard's Permit.Done is given the error of everything inside it: the
// breaker sees one outcome per call, after the retries, and a bulkhead
// rejection (which, as in hystrix, a breaker counts as a failure unless its
// classifier ignores breakerimpl.ErrRejected). Guards outside a refusing one
// are told its error too; those that refused, and those inside, are not
// asked.
//
// K is the request key a fallback cache is keyed by (use struct{} when no
// fallback needs one); T is the result type.
type Pipeline[K comparable, T any] struct {
	// Fallback serves when the primary fails or is refused.
	Fallback Fallback[K, T]
	// FallbackOn decides which errors the fallback handles; nil means all.
	// Return false for errors the caller must see as they are, such as
	// "not found" or invalid input.
	FallbackOn func(err error) bool
	// Shedder turns calls away while the service is overloaded; usually a
	// *shed.Shedder.
	Shedder Guard
	// Limiter caps the rate or concurrency of calls; usually a
	// *ratelimit.TokenBucket, *ratelimit.SlidingWindow or
	// *ratelimit.Concurrency.
	Limiter Guard
	// Degrade forces the fallback while the dependency is judged unhealthy
	// or degraded; usually a *degrade.Switch or a *health.Score. It refuses
	// with breakerimpl.ErrDegraded (Reason "degraded").
	Degrade Guard
	// Breaker is usually a *circuitbreaker.Breaker.
	Breaker Guard
	// Bulkhead caps the calls running at once; usually a *bulkhead.Bulkhead.
	Bulkhead Guard
	// Timeout bounds the whole call, retries and backoff included; usually
	// a *timeout.Timeout.
	Timeout TimeLimit
	// Retry tries a failed call again; usually a *retry.Retry.
	Retry Retrier
	// Hedge sends extra attempts of a slow call; usually a *hedge.Hedge.
	Hedge Hedger
}

// TimeLimit bounds the time of a call through its context. *timeout.Timeout
// is one. Implementations must be safe for concurrent use.
type TimeLimit interface {
	// Begin returns the context the call runs with, which carries its
	// deadline.
	Begin(ctx context.Context) context.Context
	// End is given the context Begin returned and the call's error, and
	// returns the error to report: a timeout error if the call failed after
	// its deadline.
	End(ctx context.Context, err error) error
}

// Abandoner is a TimeLimit that can answer a call at its deadline whatever
// the work does, leaving the work to run on: a *timeout.Timeout in mode
// Abandon is one. Pipeline runs the call (retries and hedges included)
// through Run when Abandons reports true, and through Begin and End
// otherwise.
type Abandoner interface {
	TimeLimit
	// Abandons reports whether calls go through Run.
	Abandons() bool
	// Run runs fn on a goroutine of its own under the call's deadline and
	// returns its error, or at the deadline a timeout error (fn runs on).
	Run(ctx context.Context, fn func(context.Context) error) error
}

// Attempt is where a call stands in its retries.
type Attempt struct {
	// N numbers the attempt, from 1 for the first.
	N int
	// Start is when the first attempt started, on the retrier's clock.
	Start int64
}

// Retrier decides whether a failed attempt is tried again, and waits before
// it is. *retry.Retry is one. Callers loop:
//
//	a := r.Begin(ctx)
//	for {
//		err = attempt(ctx)
//		if err == nil { break }
//		if a, err = r.Next(ctx, a, err); err != nil { break }
//	}
//
// Implementations must be safe for concurrent use.
type Retrier interface {
	// Begin starts a call: it counts it (for a retry budget) and returns
	// its first Attempt.
	Begin(ctx context.Context) Attempt
	// Next is given attempt a's error. It either waits for the backoff and
	// returns the next Attempt with a nil error, or returns the error to end
	// the call with.
	Next(ctx context.Context, a Attempt, err error) (Attempt, error)
	// AttemptLimit bounds each attempt on its own; nil means no bound.
	AttemptLimit() TimeLimit
}

// Hedger runs attempts of one call side by side: after a delay without an
// answer, one more. *hedge.Hedge is one. Implementations must be safe for
// concurrent use.
type Hedger interface {
	// MaxAttempts is the most attempts Do starts for one call.
	MaxAttempts() int
	// Do calls attempt(ctx, i) for i = 0, 1, … up to MaxAttempts()-1, each
	// on its own goroutine, and returns the i of the first to succeed once
	// every attempt has returned (the others are cancelled through their
	// context). If none succeeds it returns an attempt's error.
	Do(ctx context.Context, attempt func(ctx context.Context, i int) error) (winner int, err error)
}

// Execute calls fn(ctx) through the pipeline's policies, for the request
// named by key.
//
// When fn returns a nil error, the result has Source SourcePrimary, and the
// value is given to Fallback.Remember. When fn fails or a policy refuses the
// call, the fallback serves, and the result carries its Source, Age and the
// Reason the primary did not serve; if the fallback fails too, Execute
// returns errors.Join(primary error, fallback error). With no fallback (or
// FallbackOn returning false) the primary's error is returned, with the
// Reason set.
//
// A panic in fn counts as a failure for every policy. With a fallback the
// fallback serves (Reason ReasonPanic); if there is no fallback, or it fails
// too, the panic is raised again.
//
// The success path allocates nothing but what a policy needs: a
// *timeout.Timeout's context for a call whose parent can be cancelled.
func (p *Pipeline[K, T]) Execute(ctx context.Context, key K, fn func(context.Context) (T, error)) (res Result[T], err error) {
	fb := p.Fallback
	v, err := p.primary(ctx, fn, fb != nil)
	if err == nil {
		if fb != nil {
			fb.Remember(key, v)
		}
		res.Value, res.Source = v, SourcePrimary
		return res, nil
	}
	return p.serveFallback(ctx, key, err)
}

// serveFallback is Execute after the primary failed with err.
func (p *Pipeline[K, T]) serveFallback(ctx context.Context, key K, err error) (Result[T], error) {
	fb := p.Fallback
	reason := ReasonOf(err)
	if fb == nil || (p.FallbackOn != nil && !p.FallbackOn(err)) {
		rethrow(err)
		return Result[T]{Source: SourcePrimary, Reason: reason}, err
	}
	res, ferr := fb.Recover(ctx, key, err)
	if ferr != nil {
		rethrow(err)
		return Result[T]{Source: SourcePrimary, Reason: reason}, errors.Join(err, ferr)
	}
	res.Reason = reason
	return res, nil
}

// primary runs fn under the guards, outermost first, then the timeout,
// retry and hedge around it. A panic in fn is raised again, or returned as
// a *PanicError if keepPanic.
func (p *Pipeline[K, T]) primary(ctx context.Context, fn func(context.Context) (T, error), keepPanic bool) (v T, err error) {
	// A guard that refuses is the last asked; g.done tells those outside
	// it (the permits of the others are zero, and their Done does nothing).
	var g permits
	if s := p.Shedder; s != nil {
		if g.shed, err = s.Allow(ctx); err != nil {
			return v, err
		}
	}
	if l := p.Limiter; l != nil {
		if g.limit, err = l.Allow(ctx); err != nil {
			g.done(err)
			return v, err
		}
	}
	if d := p.Degrade; d != nil {
		if g.degrade, err = d.Allow(ctx); err != nil {
			g.done(err)
			return v, err
		}
	}
	if b := p.Breaker; b != nil {
		if g.breaker, err = b.Allow(ctx); err != nil {
			g.done(err)
			return v, err
		}
	}
	if b := p.Bulkhead; b != nil {
		if g.bulkhead, err = b.Allow(ctx); err != nil {
			g.done(err)
			return v, err
		}
	}
	finished := false
	defer func() {
		if !finished {
			err = g.panicked(recover(), keepPanic)
		}
	}()
	v, err = p.timed(ctx, fn)
	finished = true
	g.done(err)
	return v, err
}

// permits are the permits of a Pipeline's guards for one call. A zero
// Permit's Done does nothing, so a guard that is not there, or was not
// asked, costs a nil check.
type permits struct {
	shed, limit, degrade, breaker, bulkhead Permit
}

// done reports the call's error to every guard, innermost first.
func (g *permits) done(err error) {
	g.bulkhead.Done(err)
	g.breaker.Done(err)
	g.degrade.Done(err)
	g.limit.Done(err)
	g.shed.Done(err)
}

// panicked reports a call that panicked with r (nil for runtime.Goexit, as
// in t.FailNow, which is recorded and goes on) to every guard as a
// *PanicError. It raises the panic again unless keepPanic, and then
// returns the *PanicError.
func (g *permits) panicked(r any, keepPanic bool) error {
	pe := panicError(r)
	g.done(pe)
	if r == nil {
		return nil
	}
	if !keepPanic {
		panic(r)
	}
	return pe
}

// timed runs the retries under the timeout.
func (p *Pipeline[K, T]) timed(ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	tl := p.Timeout
	if tl == nil {
		return p.retried(ctx, fn)
	}
	if a, ok := tl.(Abandoner); ok && a.Abandons() {
		var v T
		err := a.Run(ctx, func(ctx context.Context) error {
			var err error
			v, err = p.retried(ctx, fn)
			return err
		})
		if err != nil {
			var zero T // v may still be written by the abandoned work
			return zero, err
		}
		return v, nil
	}
	tctx := tl.Begin(ctx)
	v, err := p.retried(tctx, fn)
	return v, tl.End(tctx, err)
}

// retried runs attempts until one succeeds or the retrier gives up.
func (p *Pipeline[K, T]) retried(ctx context.Context, fn func(context.Context) (T, error)) (v T, err error) {
	r := p.Retry
	if r == nil {
		return p.attempt(ctx, fn)
	}
	lim := r.AttemptLimit()
	a := r.Begin(ctx)
	for {
		if lim == nil {
			v, err = p.attempt(ctx, fn)
		} else {
			actx := lim.Begin(ctx)
			v, err = p.attempt(actx, fn)
			err = lim.End(actx, err)
		}
		if err == nil {
			return v, nil
		}
		if a, err = r.Next(ctx, a, err); err != nil {
			return v, err
		}
	}
}

// attempt runs fn once, or hedged.
func (p *Pipeline[K, T]) attempt(ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	h := p.Hedge
	if h == nil {
		return fn(ctx)
	}
	return Hedged(ctx, h, fn)
}

// Hedged runs fn under h and returns the winning attempt's value, or the
// zero value and the error h returns. It is how hedge.Execute is built.
func Hedged[T any](ctx context.Context, h Hedger, fn func(context.Context) (T, error)) (T, error) {
	values := make([]T, h.MaxAttempts())
	i, err := h.Do(ctx, func(ctx context.Context, i int) error {
		var err error
		values[i], err = fn(ctx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return values[i], nil
}

// Run calls fn(ctx) under one guard g: it asks g.Allow, runs fn if
// admitted, and reports the result to the permit. A panic in fn is reported
// as a *PanicError (a failure) and raised again. A nil g runs fn with no
// guard. It is how each policy's own Execute is built.
func Run[T any](ctx context.Context, g Guard, fn func(context.Context) (T, error)) (v T, err error) {
	var permit Permit // a nil g admits every call, and its Done does nothing
	if g != nil {
		if permit, err = g.Allow(ctx); err != nil {
			return v, err
		}
	}
	finished := false
	defer func() {
		if !finished {
			permit.Panicked(recover())
		}
	}()
	v, err = fn(ctx)
	finished = true
	permit.Done(err)
	return v, err
}

// rethrow raises again a panic that Execute turned into a *PanicError
// (directly, not wrapped: only primary makes those).
func rethrow(err error) {
	if pe, ok := err.(*PanicError); ok {
		panic(pe.Value)
	}
}
