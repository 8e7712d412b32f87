package breakerimpl

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// Errors returned by policies when they refuse a call. They live here, not
// in the policy packages, so that a fallback or a caller can tell why a call
// did not run without importing every policy. Test with errors.Is.
var (
	// ErrOpen is returned by a circuit breaker that is open.
	ErrOpen = errors.New("breakerimpl: circuit breaker is open")
	// ErrHalfOpenFull is returned by a half-open circuit breaker whose
	// probe slots are all taken.
	ErrHalfOpenFull = errors.New("breakerimpl: circuit breaker is half-open and all probes are taken")
	// ErrRejected is returned by a policy that turns calls away to protect
	// capacity: a bulkhead, rate limiter or load shedder.
	ErrRejected = errors.New("breakerimpl: call rejected")
	// ErrDegraded is returned by a guard that keeps calls off a dependency
	// it judges unhealthy or degraded (a health score under its threshold,
	// an engaged degrade switch), so that the fallback serves.
	ErrDegraded = errors.New("breakerimpl: dependency degraded, fallback forced")
)

// Outcome is what a finished call means to a policy that counts outcomes.
type Outcome uint8

const (
	// Success counts toward keeping a breaker closed.
	Success Outcome = iota
	// Failure counts toward tripping a breaker.
	Failure
	// Ignored is counted nowhere: the call says nothing about the
	// dependency's health (for example, the caller gave up).
	Ignored
)

// String returns "success", "failure" or "ignored".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Ignored:
		return "ignored"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Classifier decides the outcome of a call from the error it returned. It is
// never asked about a nil error (always a Success) or a panic (always a
// Failure), so a classifier only sorts real errors: return Success for an
// error that means "the dependency works" (say, not found), Ignored for one
// that says nothing about it.
type Classifier func(err error) Outcome

// DefaultClassifier ignores context.Canceled (the caller gave up; the
// dependency did nothing wrong) and counts every other error as a Failure,
// context.DeadlineExceeded included.
func DefaultClassifier(err error) Outcome {
	if errors.Is(err, context.Canceled) {
		return Ignored
	}
	return Failure
}

// Reason says why the primary did not serve a call. It is what a fallback
// result reports next to its source.
type Reason uint8

const (
	// ReasonNone: the primary served the call.
	ReasonNone Reason = iota
	// ReasonOpen: a circuit breaker was open (ErrOpen).
	ReasonOpen
	// ReasonHalfOpenFull: a half-open breaker had no probe slot (ErrHalfOpenFull).
	ReasonHalfOpenFull
	// ReasonRejected: a bulkhead, limiter or shedder refused the call (ErrRejected).
	ReasonRejected
	// ReasonTimeout: the call ran out of time (context.DeadlineExceeded).
	ReasonTimeout
	// ReasonError: the primary returned any other error.
	ReasonError
	// ReasonPanic: the primary panicked (*PanicError).
	ReasonPanic
	// ReasonDegraded: a health score or degrade switch kept the call off the
	// dependency (ErrDegraded).
	ReasonDegraded
)

var reasonNames = [...]string{"none", "open", "half-open-full", "rejected", "timeout", "error", "panic", "degraded"}

// String returns the reason code used in headers, logs and metrics: none,
// open, half-open-full, rejected, timeout, error, panic or degraded.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// ReasonOf maps the error of a failed call to its Reason; nil maps to
// ReasonNone.
func ReasonOf(err error) Reason {
	switch {
	case err == nil:
		return ReasonNone
	case errors.Is(err, ErrOpen):
		return ReasonOpen
	case errors.Is(err, ErrHalfOpenFull):
		return ReasonHalfOpenFull
	case errors.Is(err, ErrRejected):
		return ReasonRejected
	case errors.Is(err, ErrDegraded):
		return ReasonDegraded
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	}
	var p *PanicError
	if errors.As(err, &p) {
		return ReasonPanic
	}
	return ReasonError
}

// PanicError carries a panic out of a protected function, so that a policy
// can count it as a failure and a fallback can serve in its place.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the stack of the panicking goroutine
}

// NewPanicError captures the current stack; call it from the deferred
// function that recovered v.
func NewPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Error implements error.
func (p *PanicError) Error() string { return fmt.Sprintf("breakerimpl: panic: %v", p.Value) }

// Unwrap returns the panic value if it is an error.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
