package grpcx

import (
	"context"
	"errors"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
)

// ClientOptions are the policies a client interceptor applies to each
// call, in breakerimpl's order, outermost first:
//
//	Fallback ∘ Limiter ∘ Breaker ∘ Bulkhead ∘ Timeout ∘ Retry ∘ call
//
// Every field may be nil: that policy is skipped. The guards and the
// retry see each attempt's status through the Codes table, not their own
// classifiers: leave circuitbreaker.Settings.Classify and
// retry.Settings.Retryable nil (a code the table ignores reaches them as an
// error matching context.Canceled, a code it does not retry as one marked
// retry.Permanent, a caller's fault as a success).
type ClientOptions struct {
	// Name names the dependency in span events; it may be empty.
	Name string
	// Limiter caps the rate or concurrency of calls.
	Limiter breakerimpl.Guard
	// Breaker is usually a *circuitbreaker.Breaker; it sees one outcome
	// per call, after the retries.
	Breaker breakerimpl.Guard
	// Bulkhead caps the calls in flight; it holds a slot for the whole
	// call, retries included.
	Bulkhead breakerimpl.Guard
	// Timeout bounds the whole call, retries and backoff included; its
	// deadline reaches the server as the call's grpc-timeout.
	Timeout breakerimpl.TimeLimit
	// Retry tries a failed call again, if its code's Rule says so, after
	// the server's retry hint (grpc-retry-pushback-ms, or retry-after in
	// seconds) when it gave one.
	Retry breakerimpl.Retrier
	// Fallback answers in place of the server when the call failed or a
	// policy refused it (never for a caller's fault or an ignored code,
	// nor once the caller's context has ended).
	Fallback *Fallback
	// Codes overrides DefaultCodes for the codes it names.
	Codes Codes
}

// Fallback answers a unary call in place of the server.
type Fallback struct {
	// Name is the Source of the answers it gives; "fallback" if empty.
	Name string
	// Fn fills reply, the call's response message, for method and req; err
	// is why the server did not answer. An error lets the failure through.
	Fn func(ctx context.Context, method string, req, reply any, err error) error
}

func (f *Fallback) name() string {
	if f.Name == "" {
		return "fallback"
	}
	return f.Name
}

// client is the state of a client's interceptors.
type client struct {
	name     string
	pipe     breakerimpl.Pipeline[struct{}, struct{}]
	fallback *Fallback
	table    *table
}

func newClient(o ClientOptions) *client {
	return &client{
		name: o.Name,
		pipe: breakerimpl.Pipeline[struct{}, struct{}]{
			Limiter: o.Limiter, Breaker: o.Breaker, Bulkhead: o.Bulkhead,
			Timeout: o.Timeout, Retry: o.Retry,
		},
		fallback: o.Fallback,
		table:    newTable(o.Codes),
	}
}

// UnaryClientInterceptor returns an interceptor that runs each unary call
// through o's policies. The error a caller gets is always a gRPC status:
// the server's own (details included) for a call it answered, UNAVAILABLE
// for a breaker's refusal, RESOURCE_EXHAUSTED for a bulkhead's or a
// limiter's, DEADLINE_EXCEEDED for a timeout (see StatusOf). Degradation
// decisions (refusals, retries, timeouts, a fallback served) are events on
// the span of the call's context (package otelx).
//
// Call reports who served: the server (breakerimpl.SourcePrimary), or
// the Fallback by name with the Reason the server did not.
func UnaryClientInterceptor(o ClientOptions) grpc.UnaryClientInterceptor {
	return newClient(o).unary
}

func (c *client) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var (
		answer   error // a caller's fault, which the policies were told is a success
		attempts int
		last     breakerimpl.Reason // why the last attempt failed
		trailer  metadata.MD
	)
	callOpts := opts
	if c.pipe.Retry != nil {
		// The trailers carry the server's retry hint.
		callOpts = append(opts[:len(opts):len(opts)], grpc.Trailer(&trailer))
	}
	_, err := c.pipe.Execute(ctx, struct{}{}, func(ctx context.Context) (struct{}, error) {
		if attempts++; attempts > 1 {
			otelx.Record(ctx, otelx.Decision{Kind: otelx.Retry, Reason: last, Attempt: attempts, Name: c.name})
		}
		trailer = nil
		err := invoker(ctx, method, req, reply, cc, callOpts...)
		answer = nil
		if err == nil {
			return struct{}{}, nil
		}
		perr, class := c.table.judge(err, trailer)
		if perr == nil {
			answer = err
		} else {
			last = reasonOf(perr, class)
		}
		return struct{}{}, perr
	})
	rep := reportOf(opts)
	if err == nil {
		return answer // the layer that served said so in rep
	}
	class := Failure
	var ce *callError
	if errors.As(err, &ce) {
		class = ce.class
	}
	reason := reasonOf(err, class)
	if _, ok := otelx.KindOf(err); ok && ce == nil {
		otelx.RecordError(ctx, err, c.name) // a policy refused, or the timeout ended the call
	} else if reason == breakerimpl.ReasonTimeout {
		otelx.Record(ctx, otelx.Decision{Kind: otelx.Timeout, Reason: reason, Name: c.name})
	}
	if fb := c.fallback; fb != nil && class != Ignored && ctx.Err() == nil {
		if ferr := fb.Fn(ctx, method, req, reply, statusError(err)); ferr == nil {
			rep.set(fb.name(), reason)
			otelx.Record(ctx, otelx.Decision{Kind: otelx.Fallback, Reason: reason, Source: fb.name(), Name: c.name})
			return nil
		}
	}
	rep.set(breakerimpl.SourcePrimary, reason)
	return statusError(err)
}

// StreamClientInterceptor returns an interceptor that puts o's guards
// around each stream; the other policies are not applied, since a stream
// cannot be tried again or answered by a fallback without the caller's
// help.
//
// The Limiter, the Breaker and the Bulkhead are asked, in that order,
// before the stream opens: a refusal fails the call at once with the
// guard's status (see StatusOf), without a stream. The Breaker is told
// the stream's first answer: its first message (a success), or the
// status it ended with if it sent none, judged by Codes; so a long stream
// holds no half-open probe slot past its first message. The Bulkhead and
// the Limiter hold their permits until the stream ends: RecvMsg returned
// an error (io.EOF is a success), SendMsg failed, or the caller's context
// ended. As with any gRPC stream, a caller that neither reads to the end
// nor cancels its context leaks them.
func StreamClientInterceptor(o ClientOptions) grpc.StreamClientInterceptor {
	c := newClient(o)
	return c.stream
}

func (c *client) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s := &guardedStream{table: c.table}
	p := &c.pipe
	var err error
	if g := p.Limiter; g != nil {
		if s.limit, err = g.Allow(ctx); err != nil {
			return nil, c.refused(ctx, err)
		}
	}
	if g := p.Breaker; g != nil {
		if s.breaker, err = g.Allow(ctx); err != nil {
			s.limit.Done(err)
			return nil, c.refused(ctx, err)
		}
	}
	if g := p.Bulkhead; g != nil {
		if s.bulkhead, err = g.Allow(ctx); err != nil {
			s.breaker.Done(err)
			s.limit.Done(err)
			return nil, c.refused(ctx, err)
		}
	}
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		s.end(err)
		return nil, err
	}
	s.ClientStream = cs
	s.stop = context.AfterFunc(ctx, func() { s.end(status.FromContextError(ctx.Err()).Err()) })
	return s, nil
}

// refused records a guard's refusal of a stream and returns its status.
func (c *client) refused(ctx context.Context, err error) error {
	otelx.RecordError(ctx, err, c.name)
	return StatusOf(err).Err()
}

// guardedStream tells a stream's guards how it went.
type guardedStream struct {
	grpc.ClientStream
	table                    *table
	limit, breaker, bulkhead breakerimpl.Permit
	answered, ended          sync.Once
	stop                     func() bool
}

func (s *guardedStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	switch {
	case err == nil:
		s.answer(nil)
	case err == io.EOF:
		s.end(nil)
	default:
		s.end(err)
	}
	return err
}

func (s *guardedStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	if err != nil && err != io.EOF { // io.EOF: the status comes with RecvMsg
		s.end(err)
	}
	return err
}

// answer tells the breaker, once, what the policies make of err.
func (s *guardedStream) answer(err error) {
	s.answered.Do(func() { s.breaker.Done(err) })
}

// end tells every guard, once, how the stream ended.
func (s *guardedStream) end(err error) {
	if err != nil {
		err, _ = s.table.judge(err, s.trailer())
	}
	s.answer(err)
	s.ended.Do(func() {
		if s.stop != nil {
			s.stop()
		}
		s.bulkhead.Done(err)
		s.limit.Done(err)
	})
}

func (s *guardedStream) trailer() metadata.MD {
	if s.ClientStream == nil {
		return nil
	}
	return s.ClientStream.Trailer()
}

// report is the call option through which the interceptors say who served
// a call, for Call.
type report struct {
	grpc.EmptyCallOption
	source string
	reason breakerimpl.Reason
}

// reportOf finds the report among a call's options; nil if there is none
// (its set does nothing).
func reportOf(opts []grpc.CallOption) *report {
	for _, o := range opts {
		if r, ok := o.(*report); ok {
			return r
		}
	}
	return nil
}

func (r *report) set(source string, reason breakerimpl.Reason) {
	if r != nil {
		r.source, r.reason = source, reason
	}
}

// Call makes one unary call with a generated client's method and reports,
// as breakerimpl.Pipeline does, who served it: Source is
// breakerimpl.SourcePrimary when the gRPC server answered, SourceHTTP when
// an HTTPFallback sent the call over HTTP, or the name of the
// ClientOptions.Fallback that answered, with the Reason the server did not
// (also set when the call failed).
//
//	res, err := grpcx.Call(ctx, client.Check, &healthpb.HealthCheckRequest{})
//	// res.Value, res.Source ("primary", "http", "fallback"), res.Reason
func Call[Req, Resp any](ctx context.Context, method func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, opts ...grpc.CallOption) (breakerimpl.Result[Resp], error) {
	r := &report{}
	resp, err := method(ctx, req, append(opts[:len(opts):len(opts)], r)...)
	if r.source == "" {
		r.source = breakerimpl.SourcePrimary
	}
	return breakerimpl.Result[Resp]{Value: resp, Source: r.source, Reason: r.reason}, err
}
