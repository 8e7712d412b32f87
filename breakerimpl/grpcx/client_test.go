package grpcx_test

import (
	"context"
	"errors"
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
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// failWith answers each call with the status of codes[n-1] (OK: serving),
// the last one for calls past the list.
func failWith(cs ...codes.Code) func(context.Context, int32, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return func(_ context.Context, n int32, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		c := cs[min(int(n), len(cs))-1]
		if c == codes.OK {
			return serving, nil
		}
		return nil, status.Error(c, "from the server")
	}
}

func check(ctx context.Context, c healthpb.HealthClient) (breakerimpl.Result[*healthpb.HealthCheckResponse], error) {
	return grpcx.Call(ctx, c.Check, &healthpb.HealthCheckRequest{})
}

func TestClientBreaker(t *testing.T) {
	h := &health{check: failWith(codes.NotFound, codes.NotFound, codes.NotFound, codes.Unavailable, codes.Unavailable, codes.OK)}
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Second, Clock: clk})
	c := dial(t, serveGRPC(t, h), grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Breaker: cb})))
	ctx := context.Background()
	for range 3 { // a caller's fault is the dependency working
		if _, err := check(ctx, c); status.Code(err) != codes.NotFound {
			t.Fatalf("err %v, want the server's NOT_FOUND", err)
		}
	}
	if cb.State() != circuitbreaker.Closed || cb.Snapshot().Successes != 3 {
		t.Fatalf("after three NOT_FOUND: %v %+v; want closed with three successes", cb.State(), cb.Snapshot())
	}
	for range 2 {
		if _, err := check(ctx, c); status.Code(err) != codes.Unavailable {
			t.Fatalf("err %v", err)
		}
	}
	if cb.State() != circuitbreaker.Open {
		t.Fatalf("after two UNAVAILABLE: %v, want open", cb.State())
	}
	res, err := check(ctx, c)
	if status.Code(err) != codes.Unavailable || res.Reason != breakerimpl.ReasonOpen || h.calls.Load() != 5 {
		t.Fatalf("while open: %v, reason %v, %d calls reached the server; want UNAVAILABLE, open, 5", err, res.Reason, h.calls.Load())
	}
	clk.Advance(time.Second)
	if res, err := check(ctx, c); err != nil || res.Source != breakerimpl.SourcePrimary || cb.State() != circuitbreaker.Closed {
		t.Fatalf("probe: %v %+v %v", err, res, cb.State())
	}
}

func TestClientRetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		codes    []codes.Code
		pushback string // the server's hint with each failure
		over     grpcx.Codes
		calls    int32
		code     codes.Code
		waits    []time.Duration
	}{
		{"UNAVAILABLE retried", []codes.Code{codes.Unavailable, codes.Unavailable, codes.OK}, "", nil, 3, codes.OK, nil},
		{"after the server's pushback", []codes.Code{codes.Unavailable, codes.OK}, "2000", nil, 2, codes.OK, []time.Duration{2 * time.Second}},
		{"a negative pushback is final", []codes.Code{codes.Unavailable, codes.OK}, "-1", nil, 1, codes.Unavailable, nil},
		{"INTERNAL is not retried", []codes.Code{codes.Internal, codes.OK}, "", nil, 1, codes.Internal, nil},
		{"unless the table says so", []codes.Code{codes.Internal, codes.OK}, "", grpcx.Codes{codes.Internal: {Class: grpcx.Failure, Retry: true}}, 2, codes.OK, nil},
		{"a refusal without a hint is not retried", []codes.Code{codes.ResourceExhausted, codes.OK}, "", nil, 1, codes.ResourceExhausted, nil},
		{"a refusal with a hint waits for it", []codes.Code{codes.ResourceExhausted, codes.OK}, "1500", nil, 2, codes.OK, []time.Duration{1500 * time.Millisecond}},
		{"a caller's fault is not retried", []codes.Code{codes.InvalidArgument, codes.OK}, "", nil, 1, codes.InvalidArgument, nil},
		{"attempts are bounded", []codes.Code{codes.Unavailable}, "", nil, 3, codes.Unavailable, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &health{}
			inner := failWith(tc.codes...)
			h.check = func(ctx context.Context, n int32, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
				resp, err := inner(ctx, n, req)
				if err != nil && tc.pushback != "" {
					grpc.SetTrailer(ctx, metadata.Pairs(grpcx.PushbackKey, tc.pushback))
				}
				return resp, err
			}
			clk := clock.NewInstant(time.Time{})
			r := retry.New(retry.Settings{MaxAttempts: 3, Backoff: time.Nanosecond, Rand: func(int64) int64 { return 0 }, Clock: clk})
			c := dial(t, serveGRPC(t, h), grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Retry: r, Codes: tc.over})))
			_, err := check(context.Background(), c)
			if status.Code(err) != tc.code || h.calls.Load() != tc.calls {
				t.Fatalf("%v after %d calls; want %v after %d", err, h.calls.Load(), tc.code, tc.calls)
			}
			var waits []time.Duration
			for _, w := range clk.Waits() {
				if w > 0 {
					waits = append(waits, w)
				}
			}
			if len(waits) != len(tc.waits) || (len(waits) > 0 && waits[0] != tc.waits[0]) {
				t.Fatalf("waits %v, want %v", waits, tc.waits)
			}
		})
	}
}

func TestClientRetryBudget(t *testing.T) {
	h := &health{check: failWith(codes.Unavailable)}
	clk := clock.NewInstant(time.Time{})
	budget := retry.NewBudget(retry.BudgetSettings{Ratio: 0.1, MinRetries: 1, Clock: clk})
	r := retry.New(retry.Settings{MaxAttempts: 3, Backoff: time.Nanosecond, Budget: budget, Clock: clk})
	c := dial(t, serveGRPC(t, h), grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Retry: r})))
	for range 5 {
		check(context.Background(), c)
	}
	// 5 calls allow 0.1 × 5 + 1 retries: the first call's; the second
	// retry of the first call and the first of the others are denied.
	if h.calls.Load() != 6 || r.Snapshot().BudgetDenied != 5 {
		t.Fatalf("%d calls reached the server, %d retries denied; want 6 and 5", h.calls.Load(), r.Snapshot().BudgetDenied)
	}
}

func TestClientTimeout(t *testing.T) {
	var sawDeadline atomic.Bool
	h := &health{check: func(ctx context.Context, _ int32, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		_, ok := ctx.Deadline()
		sawDeadline.Store(ok)
		<-ctx.Done() // a hung dependency; it sees the deadline pass
		return nil, status.FromContextError(ctx.Err()).Err()
	}}
	tm := timeout.New(timeout.Settings{Timeout: 50 * time.Millisecond, Clock: clock.Real()})
	c := dial(t, serveGRPC(t, h), grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Timeout: tm})))
	start := time.Now()
	res, err := check(context.Background(), c)
	if status.Code(err) != codes.DeadlineExceeded || res.Reason != breakerimpl.ReasonTimeout {
		t.Fatalf("%v, reason %v; want DEADLINE_EXCEEDED, timeout", err, res.Reason)
	}
	// The server sees the deadline (grpc-timeout) and may answer
	// DEADLINE_EXCEEDED a moment before the client's own timer fires, so
	// the Timeout's count is not checked.
	if took := time.Since(start); !sawDeadline.Load() || took > 5*time.Second {
		t.Fatalf("server saw a deadline: %v; the call took %v", sawDeadline.Load(), took)
	}
}

func TestClientBulkheadAndFallback(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := &health{check: func(ctx context.Context, n int32, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		switch req.Service {
		case "slow":
			close(entered)
			<-release
		case "down":
			return nil, status.Error(codes.Unavailable, "down")
		case "missing":
			return nil, status.Error(codes.NotFound, "no such service")
		}
		return serving, nil
	}}
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	fb := &grpcx.Fallback{Name: "stale", Fn: func(ctx context.Context, method string, req, reply any, err error) error {
		if method != "/grpc.health.v1.Health/Check" {
			t.Errorf("fallback for %q", method)
		}
		reply.(*healthpb.HealthCheckResponse).Status = healthpb.HealthCheckResponse_UNKNOWN
		return nil
	}}
	c := dial(t, serveGRPC(t, h), grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Bulkhead: b, Fallback: fb})))
	ctx := context.Background()
	call := func(service string) (breakerimpl.Result[*healthpb.HealthCheckResponse], error) {
		return grpcx.Call(ctx, c.Check, &healthpb.HealthCheckRequest{Service: service})
	}
	done := make(chan error)
	go func() {
		_, err := call("slow")
		done <- err
	}()
	<-entered
	res, err := call("fast")
	if err != nil || res.Source != "stale" || res.Reason != breakerimpl.ReasonRejected || res.Value.GetStatus() != healthpb.HealthCheckResponse_UNKNOWN {
		t.Fatalf("with the slot taken: %+v, %v; want the fallback, rejected", res, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res, err := call("down"); err != nil || res.Source != "stale" || res.Reason != breakerimpl.ReasonError {
		t.Fatalf("UNAVAILABLE: %+v, %v; want the fallback, error", res, err)
	}
	if res, err := call("missing"); status.Code(err) != codes.NotFound || res.Source != breakerimpl.SourcePrimary {
		t.Fatalf("NOT_FOUND: %+v, %v; the caller's fault must reach the caller", res, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := grpcx.Call(cctx, c.Check, &healthpb.HealthCheckRequest{Service: "down"}); status.Code(err) != codes.Canceled {
		t.Fatalf("a cancelled call: %v, want CANCELED and no fallback", err)
	}
	if res, err := call("fast"); err != nil || res.Source != breakerimpl.SourcePrimary {
		t.Fatalf("healthy: %+v %v", res, err)
	}
}

func TestClientStream(t *testing.T) {
	release := make(chan struct{})
	h := &health{watch: func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
		if req.Service == "down" {
			return status.Error(codes.Unavailable, "down")
		}
		if err := s.Send(serving); err != nil {
			return err
		}
		select {
		case <-release:
		case <-s.Context().Done():
		}
		return nil
	}}
	clk := clock.NewFake(time.Time{})
	// As in a Pipeline, the breaker is told of the bulkhead's refusals;
	// this one ignores them.
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, Clock: clk,
		Classify: func(err error) breakerimpl.Outcome {
			if errors.Is(err, breakerimpl.ErrRejected) {
				return breakerimpl.Ignored
			}
			return breakerimpl.DefaultClassifier(err)
		},
	})
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	c := dial(t, serveGRPC(t, h), grpc.WithStreamInterceptor(grpcx.StreamClientInterceptor(grpcx.ClientOptions{Breaker: cb, Bulkhead: b})))
	ctx := context.Background()

	// A failing stream opens the breaker; the next is refused without
	// reaching the server.
	s, err := c.Watch(ctx, &healthpb.HealthCheckRequest{Service: "down"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Recv: %v", err)
	}
	if _, err := c.Watch(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable || h.calls.Load() != 1 || b.Snapshot().InFlight != 0 {
		t.Fatalf("while open: %v, %d calls, %d slots taken; want UNAVAILABLE, 1, 0", err, h.calls.Load(), b.Snapshot().InFlight)
	}

	// The half-open probe is decided by the stream's first message, while
	// the stream goes on holding its bulkhead slot.
	clk.Advance(time.Second)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err = c.Watch(sctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	if cb.State() != circuitbreaker.Closed {
		t.Fatalf("after the first message: %v, want closed", cb.State())
	}
	if _, err := c.Watch(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a second stream with the slot taken: %v, want RESOURCE_EXHAUSTED", err)
	}
	close(release)
	if _, err := s.Recv(); err == nil {
		t.Fatal("the stream goes on after the server ended it")
	}
	if got := b.Snapshot().InFlight; got != 0 {
		t.Fatalf("%d slots taken after the stream ended", got)
	}

	// A stream the caller cancels gives its slot back too.
	release = make(chan struct{})
	sctx2, cancel2 := context.WithCancel(ctx)
	s, err = c.Watch(sctx2, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	cancel2()
	deadline := time.Now().Add(5 * time.Second)
	for b.Snapshot().InFlight != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a cancelled stream kept its bulkhead slot")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
}
