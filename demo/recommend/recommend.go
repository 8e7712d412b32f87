// Package recommend is the demo's downstream dependency: a recommendations
// service the demo starts on loopback ports of its own and calls over real
// gRPC, with its HTTP/1.1 path (the same service, protojson, through
// grpcx.HTTPHandler) for the fallback transport, so the client side of
// breakerimpl (timeout, retry, bulkhead, breaker, fallback, the HTTP
// fallback) is exercised over the network.
//
// Two failpoints: recommendationsCall sits in the service itself, so a
// fault makes the dependency slow or broken on both paths, exactly as the
// demo's client sees it; recommendationsGRPC sits in front of the gRPC
// server only, so a fault there (a grpc fault such as UNAVAILABLE) takes
// the gRPC path down while HTTP still answers.
package recommend

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/demo/recommend/recommendpb"
	"github.com/chaoskit/chaoskit/inject"
)

// The upstream's fault points, switches live in any build:
// recommendationsCall fails a call over either path, recommendationsGRPC
// only the gRPC one.
var (
	recommendationsCall = inject.NewSwitch("recommendationsCall")
	recommendationsGRPC = inject.NewSwitch("recommendationsGRPC")
)

// List is a recommendation answer, as the demo serves it in JSON.
type List struct {
	ProductID int   `json:"product_id"`
	Items     []int `json:"items"`
}

// FromProto converts the service's message.
func FromProto(l *recommendpb.List) List {
	out := List{ProductID: int(l.GetProductId()), Items: make([]int, len(l.GetItems()))}
	for i, it := range l.GetItems() {
		out.Items[i] = int(it)
	}
	return out
}

// Upstream is the recommendations service.
type Upstream struct {
	recommendpb.UnimplementedRecommendationsServer
	products int
	calls    atomic.Int64
}

// NewUpstream returns a service recommending among products products.
func NewUpstream(products int) *Upstream { return &Upstream{products: products} }

// Calls is how many requests reached the service, over either path.
func (u *Upstream) Calls() int64 { return u.calls.Load() }

// Get answers the recommendations for a product.
func (u *Upstream) Get(ctx context.Context, req *recommendpb.GetRequest) (*recommendpb.List, error) {
	u.calls.Add(1)
	var ferr error
	if v, ok := recommendationsCall.Eval(); ok {
		ferr = inject.Fire(ctx, v)
	}
	if ctx.Err() != nil {
		return nil, status.FromContextError(ctx.Err()).Err() // the caller gave up
	}
	if ferr != nil {
		return nil, faultStatus(ctx, ferr)
	}
	id := req.GetProductId()
	if id <= 0 {
		return nil, status.Error(codes.InvalidArgument, "bad product id")
	}
	l := &recommendpb.List{ProductId: id}
	for i := int64(1); i <= 4; i++ {
		l.Items = append(l.Items, (id+i*7-1)%int64(u.products)+1)
	}
	return l, nil
}

// faultStatus is the status an injected fault answers with: a grpc fault's
// own, an HTTP status fault's code (with a retry hint of a second for 429
// and 503, as the service sends a Retry-After), INTERNAL for the rest.
func faultStatus(ctx context.Context, err error) error {
	var se *inject.StatusError
	if !errors.As(err, &se) {
		st := grpcx.StatusOf(err)
		if st.Code() == codes.Unknown {
			return status.Error(codes.Internal, err.Error())
		}
		return st.Err()
	}
	code := codes.Internal
	switch se.Code {
	case http.StatusServiceUnavailable:
		code = codes.Unavailable
	case http.StatusTooManyRequests:
		code = codes.ResourceExhausted
	case http.StatusBadRequest:
		code = codes.InvalidArgument
	case http.StatusNotFound:
		code = codes.NotFound
	case http.StatusGatewayTimeout:
		code = codes.DeadlineExceeded
	}
	if code == codes.Unavailable || code == codes.ResourceExhausted {
		_ = grpc.SetTrailer(ctx, metadata.Pairs(grpcx.PushbackKey, "1000"))
	}
	return status.Error(code, "recommendations failed: "+err.Error())
}

// grpcPath is the gRPC server's own interceptor: its failpoint takes the
// gRPC path down while the HTTP path still answers.
func grpcPath(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	var ferr error
	if v, ok := recommendationsGRPC.Eval(); ok {
		ferr = inject.Fire(ctx, v)
	}
	if ferr != nil {
		return nil, grpcx.StatusOf(ferr).Err()
	}
	return handler(ctx, req)
}

// Addrs are where a started Upstream answers.
type Addrs struct {
	GRPC string // host:port of the gRPC server
	HTTP string // base URL of the HTTP path
}

// Start serves u over gRPC on grpcAddr (a free loopback port when empty)
// and over HTTP on a free loopback port, until ctx ends; it returns the
// addresses and a function that stops both and waits for them.
func Start(ctx context.Context, u *Upstream, grpcAddr string) (Addrs, func(), error) {
	if grpcAddr == "" {
		grpcAddr = "127.0.0.1:0"
	}
	gl, err := net.Listen("tcp", grpcAddr)
	if err != nil {
		return Addrs{}, nil, err
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		gl.Close()
		return Addrs{}, nil, err
	}
	shared := []grpc.UnaryServerInterceptor{grpcx.TraceUnaryServer(nil)}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(append(shared, grpcPath)...))
	recommendpb.RegisterRecommendationsServer(gs, u)
	hs := &http.Server{
		Handler:           grpcx.HTTPHandler(&recommendpb.Recommendations_ServiceDesc, u, grpcx.HTTPHandlerOptions{Interceptors: shared}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = gs.Serve(gl)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		_ = hs.Serve(hl)
	}()
	shut := func() {
		gs.Stop()
		_ = hs.Close()
	}
	stop := context.AfterFunc(ctx, shut)
	wait := func() {
		stop()
		shut()
		<-done
		<-done
	}
	return Addrs{GRPC: gl.Addr().String(), HTTP: "http://" + hl.Addr().String()}, wait, nil
}
