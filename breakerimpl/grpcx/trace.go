package grpcx

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
)

// The interceptors that carry trace context across gRPC calls, in
// metadata, with a propagator (nil: W3C trace context, traceparent and
// tracestate). Put the client's first in the chain, so that an
// HTTPFallback further in sends the same headers over HTTP, and the
// server's first, so that the guards record their decisions on the
// caller's trace.

// TraceUnaryClient returns a client interceptor that writes the trace
// context of each call's context into its outgoing metadata.
func TraceUnaryClient(p propagation.TextMapPropagator) grpc.UnaryClientInterceptor {
	p = otelx.Propagator(p)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(inject(ctx, p), method, req, reply, cc, opts...)
	}
}

// TraceStreamClient is TraceUnaryClient for streams.
func TraceStreamClient(p propagation.TextMapPropagator) grpc.StreamClientInterceptor {
	p = otelx.Propagator(p)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(inject(ctx, p), desc, cc, method, opts...)
	}
}

// TraceUnaryServer returns a server interceptor that reads the trace
// context of each call's incoming metadata into its context.
func TraceUnaryServer(p propagation.TextMapPropagator) grpc.UnaryServerInterceptor {
	p = otelx.Propagator(p)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return handler(extract(ctx, p), req)
	}
}

// TraceStreamServer is TraceUnaryServer for streams.
func TraceStreamServer(p propagation.TextMapPropagator) grpc.StreamServerInterceptor {
	p = otelx.Propagator(p)
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		return handler(srv, &tracedStream{ServerStream: ss, ctx: extract(ss.Context(), p)})
	}
}

type tracedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *tracedStream) Context() context.Context { return s.ctx }

func inject(ctx context.Context, p propagation.TextMapPropagator) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	p.Inject(ctx, mdCarrier(md))
	return metadata.NewOutgoingContext(ctx, md)
}

func extract(ctx context.Context, p propagation.TextMapPropagator) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	return p.Extract(ctx, mdCarrier(md))
}

// mdCarrier lets a propagator read and write gRPC metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
