// Package grpcx adapts breakerimpl's policies to gRPC, the way httpx does
// to net/http: client policies are interceptors on a grpc.ClientConn,
// server guards are interceptors on a grpc.Server, and a call whose gRPC
// path is down can go over HTTP/1.1 to the same service.
//
// Client side, UnaryClientInterceptor runs each unary call through a
// breaker, a bulkhead, a limiter, a timeout, a retry (with its budget and
// the server's retry hint) and a fallback, composed by breakerimpl.Pipeline
// in its order; StreamClientInterceptor puts the guards around streams.
// What a status code means to them is a table, DefaultCodes, that a
// client overrides code by code (ClientOptions.Codes): failures trip the
// breaker and may be retried; a caller's fault (NOT_FOUND,
// INVALID_ARGUMENT, …) counts as a success and goes back to the caller;
// an ignored code (CANCELED) counts nowhere; a refusal
// (RESOURCE_EXHAUSTED) is retried only after the server's hint.
//
//	conn, err := grpc.NewClient(addr,
//		grpc.WithTransportCredentials(insecure.NewCredentials()),
//		grpc.WithChainUnaryInterceptor(
//			grpcx.TraceUnaryClient(nil),       // W3C traceparent in metadata
//			grpcx.UnaryClientInterceptor(grpcx.ClientOptions{Breaker: cb, Retry: r, Timeout: t}),
//			fallback.Unary,                    // an *HTTPFallback: gRPC, or HTTP when gRPC is down
//		))
//	res, err := grpcx.Call(ctx, client.Get, req) // res.Source: "primary", "http", or a fallback's name
//
// Server side, a ServerGuard (Shed, RateLimit, Bulkhead, Breaker, or any
// guard with NewServerGuard) refuses calls with UNAVAILABLE or
// RESOURCE_EXHAUSTED and a retry hint in the trailers
// (grpc-retry-pushback-ms and retry-after); UnaryStatusInterceptor gives
// an error that carries a code (an inject fault, a policy's refusal) its
// status.
//
// The HTTP path is one POST per call with protojson bodies, gzipped both
// ways once negotiated, served by HTTPHandler from the service's own
// grpc.ServiceDesc, implementation and interceptors; its errors carry a
// google.rpc.Status, so both paths have one error semantics (HTTPStatus
// and CodeOfHTTP are the two directions of the table). An HTTPFallback
// sends a call over HTTP while the gRPC path's breaker (or a Health
// signal) says it is down, or when its gRPC attempt finds the path
// unavailable, and back over gRPC once the breaker's probes succeed.
// docs/grpc.md has the tables and a walk-through.
package grpcx
