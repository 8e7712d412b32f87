// Package otelx connects breakerimpl's adapters to OpenTelemetry tracing,
// so that the policies' core packages never import it.
//
// Two things:
//
//   - Every degradation decision the adapters (httpx, grpcx) make is an
//     event on the current span of the request's context: a fallback
//     served, a breaker that refused, a bulkhead, limiter or shedder that
//     turned a call away, a retry, a timeout. The event is named
//     "breakerimpl." + the Kind ("breakerimpl.fallback", …) and carries the
//     reason code (breakerimpl.Reason, as in headers and logs) in the
//     attribute "breakerimpl.reason", with the source that served, the
//     attempt and the policy's name where they apply. Record adds one; it
//     costs a context lookup when no span records.
//
//   - Trace context crosses process boundaries with W3C traceparent (and
//     tracestate) headers: Middleware extracts it on an HTTP server,
//     Transport injects it on an HTTP client; grpcx has the gRPC
//     interceptors that do the same with metadata.
//
// Spans themselves are the application's (otelhttp, otelgrpc, or its own
// tracer): otelx adds to the span that is current and starts none.
package otelx

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

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

// EventName returns the name of the span event of kind k:
// "breakerimpl." + k.
func EventName(k Kind) string { return "breakerimpl." + string(k) }

// The attributes of a decision's event.
const (
	ReasonKey  = attribute.Key("breakerimpl.reason")
	SourceKey  = attribute.Key("breakerimpl.source")
	AttemptKey = attribute.Key("breakerimpl.attempt")
	NameKey    = attribute.Key("breakerimpl.name")
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

// sink is the decision log SetSink installed.
var sink atomic.Pointer[func(context.Context, Decision)]

// SetSink makes Record hand every decision to f too, whether or not a span
// records (package decisionlog's Log.Install does); nil removes it. It is
// one per process: set it at start.
func SetSink(f func(context.Context, Decision)) {
	if f == nil {
		sink.Store(nil)
		return
	}
	sink.Store(&f)
}

// Record adds d as an event to the span current in ctx, if it records,
// and hands it to the sink SetSink installed.
func Record(ctx context.Context, d Decision) {
	if f := sink.Load(); f != nil {
		(*f)(ctx, d)
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 1, 4)
	attrs[0] = ReasonKey.String(d.Reason.String())
	if d.Source != "" {
		attrs = append(attrs, SourceKey.String(d.Source))
	}
	if d.Attempt > 0 {
		attrs = append(attrs, AttemptKey.Int(d.Attempt))
	}
	if d.Name != "" {
		attrs = append(attrs, NameKey.String(d.Name))
	}
	span.AddEvent(EventName(d.Kind), trace.WithAttributes(attrs...))
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

// Propagator returns p, or W3C trace context (traceparent, tracestate) if
// p is nil: the default of every function here and of grpcx's.
func Propagator(p propagation.TextMapPropagator) propagation.TextMapPropagator {
	if p == nil {
		return propagation.TraceContext{}
	}
	return p
}

// Middleware returns HTTP server middleware that reads the trace context
// of each request's headers with p (nil: W3C trace context) into its
// context, so that the spans the handler starts continue the caller's
// trace.
func Middleware(p propagation.TextMapPropagator) func(http.Handler) http.Handler {
	p = Propagator(p)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := p.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// Transport returns an http.RoundTripper that writes the trace context of
// each request's context into its headers with p (nil: W3C trace context)
// before base (nil: http.DefaultTransport) sends it. The request is
// cloned first: a RoundTripper must not change the request it is given.
func Transport(base http.RoundTripper, p propagation.TextMapPropagator) http.RoundTripper {
	p = Propagator(p)
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		out := req.Clone(req.Context())
		p.Inject(req.Context(), propagation.HeaderCarrier(out.Header))
		return base.RoundTrip(out)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
