// Package decision is breakerimpl's record of degradation decisions: a
// fallback served, a breaker that refused, a bulkhead, limiter or shedder
// that turned a call away, a retry, a timeout. The adapters (httpx, grpcx)
// call Record for each; where the decisions go is installed at start:
// package decisionlog's Log.Install sets the sink (a structured log), and
// importing package otelx (a module of its own, with OpenTelemetry) adds
// each decision as an event on the current span of the request's context.
//
// It imports nothing but the standard library and breakerimpl's own
// packages, so that a service that does not trace carries no OpenTelemetry.
package decision

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// Kind is the kind of a degradation decision.
type Kind string

// The decisions the adapters record.
const (
	// Fallback: a fallback served in place of the primary (Source names
	// it, Reason says why).
	Fallback Kind = "fallback"
	// Breaker: a circuit breaker refused a call (Reason open,
	// half-open-full, or rejected for the adaptive throttle).
	Breaker Kind = "breaker"
	// Bulkhead: a bulkhead had no slot (Reason rejected).
	Bulkhead Kind = "bulkhead"
	// RateLimit: a rate limiter refused a call (Reason rejected).
	RateLimit Kind = "ratelimit"
	// Shed: a load shedder dropped a call (Reason rejected).
	Shed Kind = "shed"
	// Rejected: another guard refused a call (Reason rejected).
	Rejected Kind = "rejected"
	// Retry: a call is tried again (Attempt is the attempt starting,
	// Reason why the one before failed).
	Retry Kind = "retry"
	// Timeout: a call ran out of time (Reason timeout).
	Timeout Kind = "timeout"
)

// Decision is one degradation decision.
type Decision struct {
	Kind   Kind
	Reason breakerimpl.Reason
	// Source is the fallback that served (Fallback only).
	Source string
	// Attempt is the attempt about to start, from 2 (Retry only).
	Attempt int
	// Name is the policy's or the dependency's name, if known.
	Name string
	// SwitchedAt is when the calls were switched to the fallback that
	// served (the gRPC path's breaker opening, for an answer over HTTP);
	// zero when unknown or not a switch.
	SwitchedAt time.Time
}

// Func receives decisions.
type Func func(context.Context, Decision)

var sink, span atomic.Pointer[Func]

func store(p *atomic.Pointer[Func], f Func) {
	if f == nil {
		p.Store(nil)
		return
	}
	p.Store(&f)
}

// SetSink makes Record hand every decision to f (package decisionlog's
// Log.Install does); nil removes it. It is one per process: set it at
// start.
func SetSink(f Func) { store(&sink, f) }

// SetSpanRecorder makes Record hand every decision to f too; package otelx
// sets it when it is linked in, to add the decision to the current span.
// nil removes it.
func SetSpanRecorder(f Func) { store(&span, f) }

// Record hands d to the sink and to the span recorder, those installed.
// With neither it costs two atomic loads.
func Record(ctx context.Context, d Decision) {
	if f := sink.Load(); f != nil {
		(*f)(ctx, d)
	}
	if f := span.Load(); f != nil {
		(*f)(ctx, d)
	}
}

// KindOf says which decision a policy's error stands for: a refusal (by a
// breaker, a bulkhead, a limiter, a shedder, another guard) or a timeout.
// It reports false for any other error.
func KindOf(err error) (Kind, bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, shed.ErrOverloaded):
		return Shed, true
	case errors.Is(err, ratelimit.ErrLimited):
		return RateLimit, true
	case errors.Is(err, bulkhead.ErrFull), errors.Is(err, bulkhead.ErrWaitTimeout):
		return Bulkhead, true
	case errors.Is(err, circuitbreaker.ErrThrottled), errors.Is(err, breakerimpl.ErrOpen), errors.Is(err, breakerimpl.ErrHalfOpenFull):
		return Breaker, true
	case errors.Is(err, breakerimpl.ErrRejected):
		return Rejected, true
	case errors.Is(err, context.DeadlineExceeded):
		return Timeout, true
	}
	return "", false
}

// RecordError records the decision err stands for, if KindOf knows it,
// with the policy's name; it does nothing for other errors.
func RecordError(ctx context.Context, err error, name string) {
	if k, ok := KindOf(err); ok {
		Record(ctx, Decision{Kind: k, Reason: breakerimpl.ReasonOf(err), Name: name})
	}
}
