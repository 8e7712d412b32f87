package grpcx_test

import (
	"context"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

func newTracer() (trace.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)).Tracer("test"), exp
}

// spanEvents returns "name reason" of the events of the spans named name.
func spanEvents(exp *tracetest.InMemoryExporter, name string) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		if s.Name != name {
			continue
		}
		for _, e := range s.Events {
			reason := ""
			for _, a := range e.Attributes {
				if a.Key == otelx.ReasonKey {
					reason = a.Value.AsString()
				}
			}
			out = append(out, e.Name+" "+reason)
		}
	}
	return out
}

// The trace context reaches the server over gRPC, and over the HTTP path
// too, where the same interceptors read it from the request's headers.
func TestTracePropagation(t *testing.T) {
	tr, _ := newTracer()
	got := make(chan trace.SpanContext, 2)
	h := &health{check: func(ctx context.Context, _ int32, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		got <- trace.SpanContextFromContext(ctx)
		return serving, nil
	}}
	server := []grpc.UnaryServerInterceptor{grpcx.TraceUnaryServer(nil)}
	grpcAddr := serveGRPC(t, h, grpc.ChainUnaryInterceptor(server...))
	web := serveHTTP(t, h, nil, grpcx.HTTPHandlerOptions{Interceptors: server})
	sig := &switchHealth{}
	sig.ok.Store(true)
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: web.URL, Health: sig})
	c := dial(t, grpcAddr, grpc.WithChainUnaryInterceptor(grpcx.TraceUnaryClient(nil), f.Unary))
	ctx, span := tr.Start(context.Background(), "client")
	defer span.End()
	for _, path := range []string{"gRPC", "HTTP"} {
		sig.ok.Store(path == "gRPC")
		res, err := check(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		sc := <-got
		if sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() || !sc.IsRemote() {
			t.Fatalf("over %s (%s): the server saw %v, want the client's span as remote parent", path, res.Source, sc)
		}
	}
}

// The client's decisions are events on the caller's span; the server's on
// the span its own tracing started.
func TestDecisionEvents(t *testing.T) {
	tr, exp := newTracer()
	clk := clock.NewFake(time.Time{})
	h := &health{check: func(ctx context.Context, n int32, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if req.Service == "slow" {
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Error(codes.Unavailable, "down")
	}}
	addr := serveGRPC(t, h)
	// One failure per call, after the retries: the second call opens it.
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, Clock: clk})
	// The retry reads the real clock: the gRPC transport's own deadline
	// timer may end the slow call a moment before the timeout's context
	// says so, and only a clock that has reached the deadline then stops
	// the retry (WhyDeadline).
	r := retry.New(retry.Settings{MaxAttempts: 2, Backoff: time.Nanosecond, Clock: clock.Real()})
	fb := &grpcx.Fallback{Name: "default", Fn: func(context.Context, string, any, any, error) error { return nil }}
	tm := timeout.New(timeout.Settings{Timeout: 30 * time.Millisecond, Clock: clock.Real()})
	c := dial(t, addr, grpc.WithChainUnaryInterceptor(grpcx.TraceUnaryClient(nil),
		grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Breaker: cb, Retry: r, Fallback: fb, Timeout: tm})))

	for _, tc := range []struct {
		name, service string
		client        []string
	}{
		{"retry then fallback", "", []string{"breakerimpl.retry error", "breakerimpl.fallback error"}},
		{"timeout", "slow", []string{"breakerimpl.timeout timeout", "breakerimpl.fallback timeout"}},
		{"open", "", []string{"breakerimpl.breaker open", "breakerimpl.fallback open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			ctx, span := tr.Start(context.Background(), "client")
			if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: tc.service}); err != nil {
				t.Fatal(err)
			}
			span.End()
			if got := spanEvents(exp, "client"); !slices.Equal(got, tc.client) {
				t.Fatalf("client events %q, want %q", got, tc.client)
			}
		})
	}
	if h.calls.Load() != 3 {
		t.Fatalf("%d calls reached the server, want 3 (2 attempts, 1 slow, none while open)", h.calls.Load())
	}
}

func TestServerDecisionEvent(t *testing.T) {
	tr, exp := newTracer()
	lim := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 0, Burst: 1, Clock: clock.NewFake(time.Time{})})
	spanning := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, span := tr.Start(ctx, "server")
		defer span.End()
		return handler(ctx, req)
	}
	c := dial(t, serveGRPC(t, &health{}, grpc.ChainUnaryInterceptor(spanning, grpcx.RateLimit(lim).Unary)))
	c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatal(err)
	}
	if got := spanEvents(exp, "server"); !slices.Equal(got, []string{"breakerimpl.ratelimit rejected"}) {
		t.Fatalf("server events %q", got)
	}
}
