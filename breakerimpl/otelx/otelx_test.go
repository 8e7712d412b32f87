package otelx_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// tracer returns a tracer whose ended spans land in the exporter.
func tracer() (trace.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return tp.Tracer("test"), exp
}

func attrs(kv []attribute.KeyValue) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, a := range kv {
		m[a.Key] = a.Value.Emit()
	}
	return m
}

func TestRecord(t *testing.T) {
	tr, exp := tracer()
	ctx, span := tr.Start(context.Background(), "call")
	otelx.Record(ctx, otelx.Decision{Kind: otelx.Fallback, Reason: breakerimpl.ReasonOpen, Source: "cache", Name: "db"})
	otelx.Record(ctx, otelx.Decision{Kind: otelx.Retry, Reason: breakerimpl.ReasonError, Attempt: 2})
	otelx.RecordError(ctx, errors.New("not a decision"), "db")
	span.End()
	otelx.Record(context.Background(), otelx.Decision{Kind: otelx.Shed}) // no span: nothing, no panic

	events := exp.GetSpans()[0].Events
	if len(events) != 2 {
		t.Fatalf("%d events, want 2: %+v", len(events), events)
	}
	if e := events[0]; e.Name != "breakerimpl.fallback" || fmt.Sprint(attrs(e.Attributes)) != "map[breakerimpl.name:db breakerimpl.reason:open breakerimpl.source:cache]" {
		t.Fatalf("fallback event %s %v", e.Name, attrs(e.Attributes))
	}
	if e := events[1]; e.Name != "breakerimpl.retry" || attrs(e.Attributes)[otelx.AttemptKey] != "2" || attrs(e.Attributes)[otelx.ReasonKey] != "error" {
		t.Fatalf("retry event %s %v", e.Name, attrs(e.Attributes))
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind otelx.Kind
	}{
		{shed.ErrOverloaded, otelx.Shed},
		{ratelimit.ErrLimited, otelx.RateLimit},
		{bulkhead.ErrFull, otelx.Bulkhead},
		{bulkhead.ErrWaitTimeout, otelx.Bulkhead},
		{breakerimpl.ErrOpen, otelx.Breaker},
		{breakerimpl.ErrHalfOpenFull, otelx.Breaker},
		{circuitbreaker.ErrThrottled, otelx.Breaker},
		{fmt.Errorf("guard: %w", breakerimpl.ErrRejected), otelx.Rejected},
		{timeout.ErrTimeout, otelx.Timeout},
		{errors.New("boom"), ""},
		{nil, ""},
	} {
		if k, _ := otelx.KindOf(tc.err); k != tc.kind {
			t.Errorf("KindOf(%v) = %q, want %q", tc.err, k, tc.kind)
		}
	}
}

// The trace context crosses an HTTP hop over loopback: the server's
// context continues the client's trace, with the client's span as the
// remote parent.
func TestHTTPPropagation(t *testing.T) {
	tr, _ := tracer()
	got := make(chan trace.SpanContext, 1)
	srv := httptest.NewServer(otelx.Middleware(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- trace.SpanContextFromContext(r.Context())
	})))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: otelx.Transport(base, nil)}
	ctx, span := tr.Start(context.Background(), "client")
	defer span.End()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.Header.Get("traceparent") != "" {
		t.Fatal("the transport changed the caller's request")
	}
	sc := <-got
	if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() || !sc.IsRemote() {
		t.Fatalf("server saw %v, want the client's span %v as remote parent", sc, span.SpanContext())
	}
}

// A fallback served and the decision that led to it, as events on the
// span of the call.
func ExampleRecord() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, span := tp.Tracer("shop").Start(context.Background(), "GET /products/7")

	otelx.RecordError(ctx, breakerimpl.ErrOpen, "db")
	otelx.Record(ctx, otelx.Decision{Kind: otelx.Fallback, Reason: breakerimpl.ReasonOpen, Source: "cache", Name: "db"})
	span.End()

	for _, e := range exp.GetSpans()[0].Events {
		fmt.Println(e.Name, attrs(e.Attributes))
	}
	// Output:
	// breakerimpl.breaker map[breakerimpl.name:db breakerimpl.reason:open]
	// breakerimpl.fallback map[breakerimpl.name:db breakerimpl.reason:open breakerimpl.source:cache]
}
