package bench

import (
	"context"
	"net"
	"testing"
	"time"

	fsbudget "github.com/failsafe-go/failsafe-go/budget"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/failsafegrpc"
	fsfallback "github.com/failsafe-go/failsafe-go/fallback"
	fsretry "github.com/failsafe-go/failsafe-go/retrypolicy"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// The gRPC client interceptors with the same five policies each: a
// circuit breaker, a retry of up to 3 attempts with a retry budget, a
// timeout of 1 s, a bulkhead of 1<<20 slots, and a fallback; calls
// succeed, so the figures are the success path's. failsafe-go's gRPC
// integration is its package failsafegrpc (v0.9.8 has no .../grpc).
//
//	BenchmarkGRPC/interceptor/<lib>: the interceptor alone, around an
//	invoker that answers at once (the overhead per call);
//	BenchmarkGRPC/loopback/<lib>: a unary health check to a real gRPC
//	server over loopback TCP, bare and through each interceptor.

func breakerimplInterceptor() grpc.UnaryClientInterceptor {
	return grpcx.UnaryClientInterceptor(grpcx.ClientOptions{
		Breaker:  circuitbreaker.New(circuitbreaker.Settings{Name: "health"}),
		Bulkhead: bulkhead.New(bulkhead.Settings{MaxConcurrent: 1 << 20}),
		Timeout:  timeout.New(timeout.Settings{Timeout: time.Second}),
		Retry:    retry.New(retry.Settings{MaxAttempts: 3, Budget: retry.NewBudget(retry.BudgetSettings{})}),
		Fallback: &grpcx.Fallback{Name: "unknown", Fn: func(context.Context, string, any, any, error) error { return nil }},
	})
}

func failsafeInterceptor() grpc.UnaryClientInterceptor {
	return failsafegrpc.NewUnaryClientInterceptor[any](
		fsfallback.NewWithResult[any](nil),
		fscircuitbreaker.NewWithDefaults[any](),
		fsbulkhead.New[any](1<<20),
		fstimeout.New[any](time.Second),
		fsretry.NewBuilder[any]().WithMaxAttempts(3).WithBudget(fsbudget.New()).Build(),
	)
}

var grpcLibs = []struct {
	lib string
	ic  func() grpc.UnaryClientInterceptor
}{
	{"bare", nil},
	{"breakerimpl", breakerimplInterceptor},
	{"failsafe", failsafeInterceptor},
}

func BenchmarkGRPC(b *testing.B) {
	b.Run("interceptor", func(b *testing.B) {
		invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
		req, reply := &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}
		for _, l := range grpcLibs {
			b.Run(l.lib, func(b *testing.B) {
				ic := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					return invoker(ctx, method, req, reply, cc, opts...)
				}
				if l.ic != nil {
					ic = l.ic()
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					if err := ic(ctx, "/grpc.health.v1.Health/Check", req, reply, nil, invoker); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
	b.Run("loopback", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, serving{})
		go srv.Serve(ln)
		defer srv.Stop()
		for _, l := range grpcLibs {
			b.Run(l.lib, func(b *testing.B) {
				opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
				if l.ic != nil {
					opts = append(opts, grpc.WithUnaryInterceptor(l.ic()))
				}
				cc, err := grpc.NewClient(ln.Addr().String(), opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer cc.Close()
				c := healthpb.NewHealthClient(cc)
				ctx := context.Background()
				req := &healthpb.HealthCheckRequest{}
				if _, err := c.Check(ctx, req); err != nil { // connect before timing
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Check(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}

type serving struct {
	healthpb.UnimplementedHealthServer
}

func (serving) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}
