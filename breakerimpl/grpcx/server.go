package grpcx

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// ServerOptions says how a ServerGuard answers a call its guard refuses,
// and what it tells the guard about the others.
type ServerOptions struct {
	// Code is the status of a refusal. Zero (OK) means UNAVAILABLE.
	Code codes.Code
	// RetryAfter is the retry hint of a refusal, sent in the trailers as
	// grpc-retry-pushback-ms (milliseconds, gRFC A6) and retry-after
	// (whole seconds, rounded up, as HTTP's Retry-After). Zero means what
	// the guard's RetryAfter() time.Duration method says, if it has one
	// (the ratelimit limiters and the circuit breaker do) and it is above
	// zero, or else one second.
	RetryAfter time.Duration
	// Codes decides from the handler's status what the guard is told:
	// Failure and Refusal codes are failures, a caller's fault is a
	// success, an ignored code reaches the guard as context.Canceled. It
	// overrides DefaultCodes for the codes it names.
	Codes Codes
	// Name names the guard in span events; it may be empty.
	Name string
}

// ServerGuard puts a breakerimpl.Guard in front of a gRPC server's
// handlers: Unary and Stream are its interceptors. A refused call gets
// ServerOptions.Code with a retry hint in its trailers and never reaches
// the handler; an admitted one is served, and the guard is told how it
// ended (a panic in the handler is reported as a failure and goes on).
type ServerGuard struct {
	g     breakerimpl.Guard
	code  codes.Code
	after time.Duration
	name  string
	table *table
}

// NewServerGuard returns a ServerGuard for g.
func NewServerGuard(g breakerimpl.Guard, o ServerOptions) *ServerGuard {
	if o.Code == codes.OK {
		o.Code = codes.Unavailable
	}
	return &ServerGuard{g: g, code: o.Code, after: o.RetryAfter, name: o.Name, table: newTable(o.Codes)}
}

// Shed drops calls with s while the server is overloaded: UNAVAILABLE,
// with a retry hint of one second, as httpx.Shed answers 503.
func Shed(s *shed.Shedder) *ServerGuard {
	return NewServerGuard(s, ServerOptions{Code: codes.Unavailable, RetryAfter: time.Second})
}

// RateLimit limits calls with g, usually a ratelimit limiter:
// RESOURCE_EXHAUSTED, with the retry hint the limiter computes.
func RateLimit(g breakerimpl.Guard) *ServerGuard {
	return NewServerGuard(g, ServerOptions{Code: codes.ResourceExhausted})
}

// Bulkhead caps the calls the server runs at once with b:
// RESOURCE_EXHAUSTED, with a retry hint of one second.
func Bulkhead(b *bulkhead.Bulkhead) *ServerGuard {
	return NewServerGuard(b, ServerOptions{Code: codes.ResourceExhausted, RetryAfter: time.Second, Name: b.Name()})
}

// Breaker guards the handlers with cb: UNAVAILABLE while it refuses, with
// the rest of its open duration as the retry hint.
func Breaker(cb *circuitbreaker.Breaker) *ServerGuard {
	return NewServerGuard(cb, ServerOptions{Code: codes.Unavailable, Name: cb.Name()})
}

// Unary is the guard's grpc.UnaryServerInterceptor.
func (s *ServerGuard) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	permit, err := s.g.Allow(ctx)
	if err != nil {
		return nil, s.refuse(ctx, err, func(md metadata.MD) error { return grpc.SetTrailer(ctx, md) })
	}
	finished := false
	defer func() {
		if !finished {
			permit.Panicked(recover())
		}
	}()
	resp, err = handler(ctx, req)
	finished = true
	permit.Done(s.judge(err))
	return resp, err
}

// Stream is the guard's grpc.StreamServerInterceptor: the whole stream is
// one call to the guard.
func (s *ServerGuard) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx := ss.Context()
	permit, err := s.g.Allow(ctx)
	if err != nil {
		return s.refuse(ctx, err, func(md metadata.MD) error { ss.SetTrailer(md); return nil })
	}
	finished := false
	defer func() {
		if !finished {
			permit.Panicked(recover())
		}
	}()
	err = handler(srv, ss)
	finished = true
	permit.Done(s.judge(err))
	return err
}

// refuse answers a refused call: the retry hint in the trailers, the
// refusal as an event, the status as the error.
func (s *ServerGuard) refuse(ctx context.Context, err error, setTrailer func(metadata.MD) error) error {
	d := s.after
	if d <= 0 {
		if ra, ok := s.g.(interface{ RetryAfter() time.Duration }); ok {
			d = ra.RetryAfter()
		}
		if d <= 0 {
			d = time.Second
		}
	}
	_ = setTrailer(hintTrailer(d))
	otelx.RecordError(ctx, err, s.name)
	return status.Error(s.code, err.Error())
}

// judge is what the guard is told of a handler's error.
func (s *ServerGuard) judge(err error) error {
	if err == nil {
		return nil
	}
	perr, _ := s.table.judge(StatusOf(err).Err(), nil)
	return perr
}

// UnaryStatusInterceptor answers a handler's error with the status StatusOf
// gives it, so that an error carrying a code (an inject fault, a policy's
// refusal, a timeout) reaches the client with that code rather than
// UNKNOWN. Put it first in the chain, so that the others see the status.
func UnaryStatusInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	return resp, statusError(err)
}

// StreamStatusInterceptor is UnaryStatusInterceptor for streams.
func StreamStatusInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return statusError(handler(srv, ss))
}
