package grpcx_test

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

func TestServerRateLimit(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	lim := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 0.5, Burst: 1, Clock: clk})
	h := &health{}
	g := grpcx.RateLimit(lim)
	c := dial(t, serveGRPC(t, h, grpc.UnaryInterceptor(g.Unary), grpc.StreamInterceptor(g.Stream)))
	ctx := context.Background()
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	var trailer metadata.MD
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.ResourceExhausted || h.calls.Load() != 1 {
		t.Fatalf("over the limit: %v, %d calls served; want RESOURCE_EXHAUSTED, 1", err, h.calls.Load())
	}
	if p, ra := trailer.Get(grpcx.PushbackKey), trailer.Get(grpcx.RetryAfterKey); len(p) != 1 || p[0] != "2000" || len(ra) != 1 || ra[0] != "2" {
		t.Fatalf("trailer %v; want a pushback of 2000 ms and retry-after 2 (a token every 2 s)", trailer)
	}
	// A stream is one call to the limiter.
	s, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a stream over the limit: %v", err)
	}
	clk.Advance(2 * time.Second)
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("after 2 s: %v", err)
	}
}

type hotCPU struct{ bits atomic.Uint64 }

func (c *hotCPU) Usage() float64 { return math.Float64frombits(c.bits.Load()) }

func TestServerShed(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cpu := &hotCPU{}
	s := shed.New(shed.Settings{CPU: cpu, Clock: clk})
	h := &health{check: func(ctx context.Context, _ int32, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if req.Service == "missing" {
			return nil, status.Error(codes.NotFound, "no such service")
		}
		if req.Service == "broken" {
			return nil, status.Error(codes.Internal, "bug")
		}
		return serving, nil
	}}
	c := dial(t, serveGRPC(t, h, grpc.UnaryInterceptor(grpcx.Shed(s).Unary)))
	ctx := context.Background()
	// What the shedder is told: a failure gives it no latency, a caller's
	// fault is a served request.
	c.Check(ctx, &healthpb.HealthCheckRequest{Service: "broken"})
	clk.Advance(time.Second)
	if snap := s.Snapshot(); snap.MinRT != 0 {
		t.Fatalf("after INTERNAL: %+v; a failure gives no latency", snap)
	}
	c.Check(ctx, &healthpb.HealthCheckRequest{Service: "missing"})
	clk.Advance(time.Second)
	if snap := s.Snapshot(); snap.MinRT == 0 {
		t.Fatalf("after NOT_FOUND: %+v; a served request gives its latency", snap)
	}
	// Pile up requests in flight on a cool CPU, then heat it.
	var held []breakerimpl.Permit
	for range 60 {
		p, err := s.Allow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	for _, p := range held[:10] {
		p.Done(errors.New("failed"))
	}
	cpu.bits.Store(math.Float64bits(0.99))
	var trailer metadata.MD
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	if status.Code(err) != codes.Unavailable || len(trailer.Get(grpcx.PushbackKey)) != 1 || trailer.Get(grpcx.PushbackKey)[0] != "1000" {
		t.Fatalf("overloaded: %v, trailer %v; want UNAVAILABLE with a pushback of 1000 ms", err, trailer)
	}
	for _, p := range held[10:] {
		p.Done(nil)
	}
}

// A client's retry honours the hint of a server's refusal.
func TestServerHintReachesClientRetry(t *testing.T) {
	b := bulkhead.New(bulkhead.Settings{Name: "checks", MaxConcurrent: 1})
	hold, err := b.Allow(context.Background()) // the only slot is taken
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewInstant(time.Time{})
	r := retry.New(retry.Settings{MaxAttempts: 2, Backoff: time.Nanosecond, Clock: clk, OnEvent: func(e retry.Event) {
		if e.Kind == retry.Retrying {
			hold.Done(nil) // the slot comes free during the wait
		}
	}})
	h := &health{}
	c := dial(t, serveGRPC(t, h, grpc.UnaryInterceptor(grpcx.Bulkhead(b).Unary)),
		grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Retry: r})))
	if _, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("%v; want the retry to succeed", err)
	}
	if w := clk.Waits(); len(w) != 1 || w[0] != time.Second {
		t.Fatalf("waits %v, want the server's pushback of 1 s", w)
	}
}

func TestServerGuardPanic(t *testing.T) {
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	g := grpcx.Bulkhead(b)
	info := &grpc.UnaryServerInfo{FullMethod: "/x/Y"}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not go on")
			}
		}()
		g.Unary(context.Background(), nil, info, func(context.Context, any) (any, error) { panic("boom") })
	}()
	if b.Snapshot().InFlight != 0 {
		t.Fatal("a panicking handler kept its slot")
	}
}

type injected struct{ code uint32 }

func (e injected) Error() string       { return "injected grpc status" }
func (e injected) GRPCCode() uint32    { return e.code }
func (e injected) GRPCMessage() string { return "fault on" }

func TestStatusInterceptor(t *testing.T) {
	h := &health{check: func(context.Context, int32, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		return nil, errors.Join(errors.New("recommend"), injected{uint32(codes.Unavailable)})
	}}
	c := dial(t, serveGRPC(t, h, grpc.UnaryInterceptor(grpcx.UnaryStatusInterceptor)))
	_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != "fault on" {
		t.Fatalf("%v; want UNAVAILABLE: fault on", err)
	}
}
