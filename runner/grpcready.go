package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/internal/reach"
)

// grpcHealth asks a gRPC-only target whether it is ready, by the standard
// health protocol (grpc.health.v1.Health/Check) about one service name
// ("" is the server as a whole). A server that answers UNIMPLEMENTED
// serves no health service: it is ready once it accepts a TCP
// connection, and the note says so once.
type grpcHealth struct {
	addr, service string
	tls           *tls.Config
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	once          sync.Once
	conn          *grpc.ClientConn
	connErr       error
	// fellBack says the server answered UNIMPLEMENTED: the check is a
	// TCP connect from then on.
	fellBack bool
}

func newGRPCHealth(addr, service string, allow *reach.Policy, cfg *tls.Config) *grpcHealth {
	return &grpcHealth{addr: addr, service: service, tls: cfg, dial: allow.Dial(&net.Dialer{Timeout: controlTimeout})}
}

// check makes one readiness check: nil when the target is ready.
func (h *grpcHealth) check(ctx context.Context) error {
	if h.fellBack {
		return h.connect(ctx)
	}
	h.once.Do(func() {
		h.conn, h.connErr = grpc.NewClient("passthrough:///"+h.addr,
			grpc.WithTransportCredentials(grpcCredentials(h.tls)),
			grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return h.dial(ctx, "tcp", a) }))
	})
	if h.connErr != nil {
		return h.connErr
	}
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	res, err := healthpb.NewHealthClient(h.conn).Check(cctx, &healthpb.HealthCheckRequest{Service: h.service})
	switch {
	case status.Code(err) == codes.Unimplemented:
		h.fellBack = true
		return h.connect(ctx)
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("gRPC health check of %s: the server knows no service %q (set target.grpc.health to a service it reports on, or leave it empty for the whole server)", h.addr, h.service)
	case err != nil:
		return fmt.Errorf("gRPC health check of %s: %v", h.addr, err)
	case res.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return fmt.Errorf("gRPC health check of %s: %s, want SERVING", h.addr, res.GetStatus())
	}
	return nil
}

// connect is the fallback check: the address accepts a TCP connection.
func (h *grpcHealth) connect(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	c, err := h.dial(cctx, "tcp", h.addr)
	if err != nil {
		return fmt.Errorf("the gRPC server serves no health service, and %s accepts no connection: %v", h.addr, err)
	}
	return c.Close()
}

// close releases the connection.
func (h *grpcHealth) close() {
	if h.conn != nil {
		_ = h.conn.Close()
	}
}
