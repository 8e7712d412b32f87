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
//     attempt and the policy's name where they apply. The adapters record
//     decisions with package decision (breakerimpl's core module, free of
//     OpenTelemetry); linking otelx in adds each as a span event (AddEvent).
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
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/chaoskit/chaoskit/breakerimpl/decision"
)

// Kind, Decision and the decisions recorded are package decision's,
// named here too for the code written against otelx.
type (
	Kind     = decision.Kind
	Decision = decision.Decision
)

// The decisions the adapters record (see package decision).
const (
	Fallback  = decision.Fallback
	Breaker   = decision.Breaker
	Bulkhead  = decision.Bulkhead
	RateLimit = decision.RateLimit
	Shed      = decision.Shed
	Rejected  = decision.Rejected
	Retry     = decision.Retry
	Timeout   = decision.Timeout
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

// Linking otelx in makes every decision.Record an event on the current
// span too.
func init() { decision.SetSpanRecorder(AddEvent) }

// SetSink makes Record hand every decision to f too, whether or not a span
// records (package decisionlog's Log.Install does); nil removes it. It is
// decision.SetSink.
func SetSink(f func(context.Context, Decision)) { decision.SetSink(f) }

// Record adds d as an event to the span current in ctx, if it records,
// and hands it to the sink SetSink installed. It is decision.Record.
func Record(ctx context.Context, d Decision) { decision.Record(ctx, d) }

// AddEvent adds d as an event to the span current in ctx, if it records;
// it costs a context lookup when no span records.
func AddEvent(ctx context.Context, d Decision) {
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

// KindOf says which decision a policy's error stands for (decision.KindOf).
func KindOf(err error) (Kind, bool) { return decision.KindOf(err) }

// RecordError records the decision err stands for, if KindOf knows it,
// with the policy's name (decision.RecordError).
func RecordError(ctx context.Context, err error, name string) { decision.RecordError(ctx, err, name) }

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
