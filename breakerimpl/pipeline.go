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
//	Fallback ∘ Breaker ∘ fn
//
// and, as the later policies arrive, fallback ∘ shedder ∘ rate limiter ∘
// breaker ∘ bulkhead ∘ timeout ∘ retry ∘ fn (see the package doc for why
// this order). Every field may be nil: that policy is skipped. A Pipeline
// holds no state of its own, is safe for concurrent use, and may be copied.
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
	// Breaker is usually a *circuitbreaker.Breaker.
	Breaker Guard
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
// The success path does not allocate.
func (p *Pipeline[K, T]) Execute(ctx context.Context, key K, fn func(context.Context) (T, error)) (Result[T], error) {
	fb := p.Fallback
	v, err := p.primary(ctx, fn, fb != nil)
	if err == nil {
		if fb != nil {
			fb.Remember(key, v)
		}
		return Result[T]{Value: v, Source: SourcePrimary}, nil
	}
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

// primary runs fn under the guards; see run.
func (p *Pipeline[K, T]) primary(ctx context.Context, fn func(context.Context) (T, error), keepPanic bool) (v T, err error) {
	return run(ctx, p.Breaker, fn, keepPanic)
}

// Run calls fn(ctx) under one guard g: it asks g.Allow, runs fn if
// admitted, and reports the result to the permit. A panic in fn is reported
// as a *PanicError (a failure) and raised again. It is how each policy's own
// Execute is built.
func Run[T any](ctx context.Context, g Guard, fn func(context.Context) (T, error)) (T, error) {
	return run(ctx, g, fn, false)
}

// run is Run; if keepPanic, a panic in fn is returned as a *PanicError
// instead of raised again.
func run[T any](ctx context.Context, g Guard, fn func(context.Context) (T, error), keepPanic bool) (v T, err error) {
	var permit Permit
	if g != nil {
		if permit, err = g.Allow(ctx); err != nil {
			return v, err
		}
	}
	// The deferred function reports the outcome, normal or panic: cheaper
	// than a deferred check followed by a call to Done. If fn did not
	// finish, it recovers the panic, reports it as a *PanicError, and raises
	// it again unless keepPanic, in which case the error becomes the
	// *PanicError.
	finished := false
	defer func() {
		if finished {
			permit.Done(err)
			return
		}
		err = panicked(permit, recover(), keepPanic)
	}()
	v, err = fn(ctx)
	finished = true
	return v, err
}

// panicked reports to permit a call that panicked with r (nil for
// runtime.Goexit, as in t.FailNow, which is recorded and goes on) and
// raises the panic again, or returns it as a *PanicError if keepPanic.
func panicked(permit Permit, r any, keepPanic bool) error {
	if r == nil {
		permit.Done(&PanicError{Value: "runtime.Goexit"})
		return nil
	}
	pe := NewPanicError(r)
	permit.Done(pe)
	if !keepPanic {
		panic(r)
	}
	return pe
}

// rethrow raises again a panic that Execute turned into a *PanicError
// (directly, not wrapped: only primary makes those).
func rethrow(err error) {
	if pe, ok := err.(*PanicError); ok {
		panic(pe.Value)
	}
}
