package grpcx_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
)

// down is a health service that is always unavailable.
type down struct {
	healthpb.UnimplementedHealthServer
}

func (down) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(codes.Unavailable, "inventory database down")
}

// A client whose breaker opens after two failures, with a fallback that
// answers UNKNOWN in place of the server.
func ExampleUnaryClientInterceptor() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, down{})
	go srv.Serve(ln)
	defer srv.Stop()

	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "inventory", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2},
		Clock: clock.NewFake(time.Time{}),
	})
	stale := &grpcx.Fallback{Name: "stale", Fn: func(ctx context.Context, method string, req, reply any, err error) error {
		reply.(*healthpb.HealthCheckResponse).Status = healthpb.HealthCheckResponse_UNKNOWN
		return nil
	}}
	cc, _ := grpc.NewClient(ln.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Breaker: cb, Fallback: stale})))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	for range 3 {
		res, err := grpcx.Call(context.Background(), client.Check, &healthpb.HealthCheckRequest{})
		fmt.Println(res.Value.GetStatus(), res.Source, res.Reason, err, cb.State())
	}
	// Output:
	// UNKNOWN stale error <nil> closed
	// UNKNOWN stale error <nil> open
	// UNKNOWN stale open <nil> open
}

// up is a health service that is always serving.
type up struct {
	healthpb.UnimplementedHealthServer
}

func (up) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// The gRPC port refuses connections; the same call is answered over HTTP
// by the same service, until the gRPC path's breaker opens and calls go
// over HTTP without trying gRPC.
func ExampleHTTPFallback() {
	web := httptest.NewServer(grpcx.HTTPHandler(&healthpb.Health_ServiceDesc, up{}, grpcx.HTTPHandlerOptions{}))
	defer web.Close()
	gone, _ := net.Listen("tcp", "127.0.0.1:0")
	gone.Close() // nothing listens on the gRPC port

	f := grpcx.NewHTTPFallback(grpcx.HTTPFallbackSettings{
		BaseURL: web.URL,
		Breaker: circuitbreaker.New(circuitbreaker.Settings{
			Name: "health-grpc", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1},
			Clock: clock.NewFake(time.Time{}),
		}),
	})
	defer f.Close()
	cc, _ := grpc.NewClient(gone.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(f.Unary))
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	for range 2 {
		res, err := grpcx.Call(context.Background(), client.Check, &healthpb.HealthCheckRequest{})
		fmt.Println(res.Value.GetStatus(), res.Source, res.Reason, err)
	}
	// Output:
	// SERVING http error <nil>
	// SERVING http open <nil>
}

// The two directions of the error table.
func ExampleHTTPStatus() {
	for _, c := range []codes.Code{codes.NotFound, codes.ResourceExhausted, codes.Unavailable} {
		fmt.Println(c, "→", grpcx.HTTPStatus(c))
	}
	fmt.Println(502, "→", grpcx.CodeOfHTTP(502))
	// Output:
	// NotFound → 404
	// ResourceExhausted → 429
	// Unavailable → 503
	// 502 → Unavailable
}
