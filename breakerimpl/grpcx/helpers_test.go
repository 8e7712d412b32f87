package grpcx_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// health is a test service: grpc's own health-checking service, whose
// Check runs check and whose Watch runs watch. It counts the calls that
// reached it.
type health struct {
	healthpb.UnimplementedHealthServer
	calls atomic.Int32
	check func(ctx context.Context, n int32, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)
	watch func(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error
}

var serving = &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}

func (h *health) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	n := h.calls.Add(1)
	if h.check == nil {
		return serving, nil
	}
	return h.check(ctx, n, req)
}

func (h *health) Watch(req *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	h.calls.Add(1)
	return h.watch(req, s)
}

// serveGRPC serves h on a loopback port until the test ends and returns
// its address.
func serveGRPC(t *testing.T, h healthpb.HealthServer, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return ln.Addr().String()
}

// serveHTTP serves h's HTTP path on a loopback port until the test ends,
// with interceptors, behind wrap (nil: none).
func serveHTTP(t *testing.T, h healthpb.HealthServer, wrap func(http.Handler) http.Handler, o grpcx.HTTPHandlerOptions) *httptest.Server {
	t.Helper()
	var handler http.Handler = grpcx.HTTPHandler(&healthpb.Health_ServiceDesc, h, o)
	if wrap != nil {
		handler = wrap(handler)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// dial returns a health client over a connection closed when the test ends.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) healthpb.HealthClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return healthpb.NewHealthClient(cc)
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
