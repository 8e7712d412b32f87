package grpcx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
)

// SourceHTTP is the Source of an answer an HTTPFallback got over HTTP.
const SourceHTTP = "http"

// Health says whether the gRPC path of a dependency is healthy enough to
// be tried. An HTTPFallback asks it before each call; while it says no,
// calls go over HTTP without touching gRPC. Implementations must be safe
// for concurrent use and cheap (they are asked on every call), and must
// become healthy again without gRPC traffic: nothing is sent over gRPC
// while they say no. A per-dependency health score with a threshold
// (breakerimpl/health) is one; the gRPC path's circuit breaker, whose
// open duration ends by itself, is the default.
type Health interface {
	Healthy() bool
}

// Recorder is a Health that learns from the gRPC path's calls, as a
// *health.Score does: an HTTPFallback whose Health is one tells it each
// gRPC attempt's latency and outcome (nil when the server answered,
// whatever its code; the error when the path failed or the time ran out).
type Recorder interface {
	Health
	Record(latency time.Duration, err error)
}

// HTTPFallbackSettings configures an HTTPFallback. Only BaseURL is
// required.
type HTTPFallbackSettings struct {
	// BaseURL is where the same service answers over HTTP (an
	// HTTPHandler), such as "http://127.0.0.1:8081": a call goes to
	// BaseURL + its full method name, "/package.Service/Method".
	BaseURL string
	// Client sends the HTTP requests. Nil means a client of its own (on
	// a transport of its own, whose idle connections Close closes).
	Client *http.Client
	// Breaker guards the gRPC path. It is told the path's failures
	// (PathFailure), and a success for every answer the server gave, what
	// ever its code: the path worked. While it refuses, calls go over
	// HTTP; its half-open probes bring them back to gRPC. Nil means a
	// breaker of its own: 5 failures in a row open it for 5 s.
	Breaker *circuitbreaker.Breaker
	// ConsecutiveTimeouts is how many gRPC attempts in a row that ran out
	// of time (DEADLINE_EXCEEDED) send the following calls over HTTP: a
	// path that hangs is as unavailable as one that refuses, and each
	// such attempt is also told to Breaker as a failure. The count is kept
	// by a breaker of its own (TimeoutBreaker: ConsecutiveFailures, with
	// Breaker's open duration and clock), so that after the open
	// duration one probe goes over gRPC again, and every answer in time
	// starts the count afresh. Zero means 3, the number the degradation
	// seed names; below zero, a timed-out attempt says nothing about the
	// path (it is neither counted nor a failure).
	ConsecutiveTimeouts int
	// Health, if set, is asked before the breaker: while it says
	// unhealthy, calls go over HTTP with Reason "open". Nil means the
	// breaker alone decides. A Health that is a Recorder (a
	// *health.Score) is told every gRPC attempt.
	Health Health
	// PathFailure says which errors of a gRPC attempt mean the gRPC path
	// is unavailable, so that the same call is sent over HTTP at once. Nil
	// means UNAVAILABLE without a retry hint: the connection failed or was
	// refused, or the server said it is unavailable, but not a refusal
	// that asks to come back later (that goes to the caller, whose retry
	// honours it). trailer holds the attempt's trailers.
	PathFailure func(err error, trailer metadata.MD) bool
	// MinGzip is the size from which request bodies are gzipped, once the
	// server said it takes gzip (an Accept-Encoding: gzip in an answer, RFC
	// 7694). Zero means 1024 bytes; below zero, never. Answers are asked
	// for in gzip always.
	MinGzip int
	// MaxMessageSize bounds an answer's body, uncompressed. Zero means
	// 4 MiB, gRPC's default.
	MaxMessageSize int64
	// Name names the dependency in span events; it may be empty.
	Name string
}

// HTTPFallback is a client transport that sends a call over HTTP/1.1 when
// its gRPC path is unavailable or its breaker is open, and back over gRPC
// once it is healthy again: the same request message, in protojson, to
// the same service's HTTPHandler, with one error semantics for both
// paths (the status an HTTP answer carries, or CodeOfHTTP's for one that
// carries none). Install Unary on the gRPC client connection, inside the
// policies of UnaryClientInterceptor (which then see one answer per
// attempt, whichever path gave it); Call reports Source SourceHTTP and
// the Reason for an answer that came over HTTP (open, half-open-full,
// error). Make one with NewHTTPFallback; it is safe for concurrent use.
type HTTPFallback struct {
	base      string
	client    *http.Client
	own       *http.Transport // the transport of a client of its own
	breaker   *circuitbreaker.Breaker
	timeouts  *circuitbreaker.Breaker // nil when timeouts say nothing
	health    Health
	failure   func(error, metadata.MD) bool
	minGzip   int
	maxBody   int64
	name      string
	gzipTaken atomic.Bool // the server said it takes gzipped requests
	viaHTTP   atomic.Uint64
	gzipSaved atomic.Uint64 // bytes gzip kept off the wire, both ways
}

// NewHTTPFallback returns an HTTPFallback with the given settings.
func NewHTTPFallback(s HTTPFallbackSettings) *HTTPFallback {
	f := &HTTPFallback{
		base: strings.TrimSuffix(s.BaseURL, "/"), client: s.Client, breaker: s.Breaker, health: s.Health,
		failure: s.PathFailure, minGzip: s.MinGzip, maxBody: s.MaxMessageSize, name: s.Name,
	}
	if f.client == nil {
		f.own = &http.Transport{MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second}
		f.client = &http.Client{Transport: f.own}
	}
	if f.breaker == nil {
		f.breaker = circuitbreaker.New(circuitbreaker.Settings{Name: s.Name, Rule: circuitbreaker.ConsecutiveFailures{Threshold: 5}})
	}
	if f.failure == nil {
		f.failure = unavailable
	}
	if n := s.ConsecutiveTimeouts; n >= 0 {
		if n == 0 {
			n = DefaultConsecutiveTimeouts
		}
		bs := f.breaker.Settings()
		f.timeouts = circuitbreaker.New(circuitbreaker.Settings{
			Name: s.Name + " timeouts", Rule: circuitbreaker.ConsecutiveFailures{Threshold: n},
			OpenDuration: bs.OpenDuration, Clock: bs.Clock,
		})
	}
	if f.minGzip == 0 {
		f.minGzip = defaultMinGzip
	}
	if f.maxBody <= 0 {
		f.maxBody = defaultMaxMessageSize
	}
	return f
}

// DefaultConsecutiveTimeouts is the ConsecutiveTimeouts of settings that
// leave it zero.
const DefaultConsecutiveTimeouts = 3

// unavailable is the default PathFailure.
func unavailable(err error, trailer metadata.MD) bool {
	if status.Code(err) != codes.Unavailable {
		return false
	}
	_, hinted := hint(trailer)
	return !hinted
}

// Breaker returns the breaker of the gRPC path.
func (f *HTTPFallback) Breaker() *circuitbreaker.Breaker { return f.breaker }

// TimeoutBreaker returns the breaker that counts the gRPC path's timed-out
// attempts in a row (see HTTPFallbackSettings.ConsecutiveTimeouts), or nil
// when timeouts say nothing about the path.
func (f *HTTPFallback) TimeoutBreaker() *circuitbreaker.Breaker { return f.timeouts }

// Name returns HTTPFallbackSettings.Name.
func (f *HTTPFallback) Name() string { return f.name }

// GzipSavedBytes counts the bytes gzip kept off the wire since creation:
// for each gzipped request body and answer, its size uncompressed less its
// size compressed (none for a body gzip made larger).
func (f *HTTPFallback) GzipSavedBytes() uint64 { return f.gzipSaved.Load() }

// saved counts the difference between a body's sizes.
func (f *HTTPFallback) saved(plain, compressed int) {
	if plain > compressed {
		f.gzipSaved.Add(uint64(plain - compressed))
	}
}

// ServedOverHTTP counts the calls sent over HTTP since creation.
func (f *HTTPFallback) ServedOverHTTP() uint64 { return f.viaHTTP.Load() }

// Close closes the idle connections of a client of its own.
func (f *HTTPFallback) Close() {
	if f.own != nil {
		f.own.CloseIdleConnections()
	}
}

// Unary is the fallback's grpc.UnaryClientInterceptor.
func (f *HTTPFallback) Unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if h := f.health; h != nil && !h.Healthy() {
		return f.overHTTP(ctx, method, req, reply, opts, breakerimpl.ReasonOpen, time.Time{})
	}
	var tpermit breakerimpl.Permit // the timeouts breaker's; zero when there is none
	if tb := f.timeouts; tb != nil {
		var err error
		if tpermit, err = tb.Allow(ctx); err != nil {
			otelx.RecordError(ctx, err, f.name)
			return f.overHTTP(ctx, method, req, reply, opts, breakerimpl.ReasonOf(err), tb.Snapshot().Since)
		}
	}
	permit, err := f.breaker.Allow(ctx)
	if err != nil {
		tpermit.Done(context.Canceled) // not asked: says nothing
		otelx.RecordError(ctx, err, f.name)
		return f.overHTTP(ctx, method, req, reply, opts, breakerimpl.ReasonOf(err), f.breaker.Snapshot().Since)
	}
	var trailer metadata.MD
	finished := false
	defer func() {
		if !finished {
			r := recover()
			tpermit.Done(context.Canceled)
			permit.Panicked(r)
		}
	}()
	began := time.Now()
	err = invoker(ctx, method, req, reply, cc, append(opts[:len(opts):len(opts)], grpc.Trailer(&trailer))...)
	finished = true
	code := status.Code(err)
	switch {
	case err == nil:
		tpermit.Done(nil)
		permit.Done(nil)
		f.record(began, nil)
	case f.failure(err, trailer):
		tpermit.Done(context.Canceled) // a refusal, not a timeout
		permit.Done(err)
		f.record(began, err)
		return f.overHTTP(ctx, method, req, reply, opts, breakerimpl.ReasonError, time.Now())
	case code == codes.DeadlineExceeded && f.timeouts != nil:
		// The path hangs: a failure of it, and one more in a row.
		tpermit.Done(err)
		permit.Done(err)
		f.record(began, err)
	case code == codes.Canceled || code == codes.DeadlineExceeded:
		tpermit.Done(context.Canceled)
		permit.Done(context.Canceled) // the time ran out: that says nothing about the path
		if code == codes.DeadlineExceeded {
			f.record(began, err) // but it was slow: a score counts that
		}
	default:
		tpermit.Done(nil) // the server answered in time: the path works
		permit.Done(nil)
		f.record(began, nil)
	}
	reportOf(opts).set(breakerimpl.SourcePrimary, breakerimpl.ReasonNone)
	return err
}

// record tells a Recorder health how a gRPC attempt begun at began ended.
func (f *HTTPFallback) record(began time.Time, err error) {
	if r, ok := f.health.(Recorder); ok {
		r.Record(time.Since(began), err)
	}
}

// overHTTP sends the call over HTTP, for reason, and reports it;
// switchedAt is when calls were switched to HTTP (zero when unknown).
func (f *HTTPFallback) overHTTP(ctx context.Context, method string, req, reply any, opts []grpc.CallOption, reason breakerimpl.Reason, switchedAt time.Time) error {
	f.viaHTTP.Add(1)
	err := f.post(ctx, method, req, reply, opts)
	if err != nil {
		reportOf(opts).set(breakerimpl.SourcePrimary, reason)
		return err
	}
	reportOf(opts).set(SourceHTTP, reason)
	otelx.Record(ctx, otelx.Decision{Kind: otelx.Fallback, Reason: reason, Source: SourceHTTP, Name: f.name, SwitchedAt: switchedAt})
	return nil
}

// post makes the HTTP request of a call and fills reply, or returns the
// call's status error. A server that refuses a gzipped body (415) is sent
// it again uncompressed, once.
func (f *HTTPFallback) post(ctx context.Context, method string, req, reply any, opts []grpc.CallOption) error {
	in, ok1 := req.(proto.Message)
	out, ok2 := reply.(proto.Message)
	if !ok1 || !ok2 {
		return status.Errorf(codes.Internal, "grpcx: the HTTP path sends protobuf messages, not %T and %T", req, reply)
	}
	body, err := marshal.Marshal(in)
	if err != nil {
		return status.Errorf(codes.Internal, "grpcx: encode the request: %v", err)
	}
	gz := f.minGzip >= 0 && len(body) >= f.minGzip && f.gzipTaken.Load()
	for {
		resp, err := f.send(ctx, method, body, gz)
		if err != nil {
			return err
		}
		if acceptsGzip(resp.Header) {
			f.gzipTaken.Store(true)
		}
		if resp.StatusCode == http.StatusUnsupportedMediaType && gz {
			discard(resp)
			f.gzipTaken.Store(false)
			gz = false
			continue
		}
		return f.answer(resp, out, opts)
	}
}

func (f *HTTPFallback) send(ctx context.Context, method string, body []byte, gz bool) (*http.Response, error) {
	payload := body
	if gz {
		payload = gzipBytes(body)
		f.saved(len(body), len(payload))
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, f.base+method, bytes.NewReader(payload))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "grpcx: HTTP request: %v", err)
	}
	h := hreq.Header
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		metadataHeaders(h, md)
	}
	h.Set("Content-Type", contentTypeJSON)
	h.Set("Accept", contentTypeJSON)
	h.Set("Accept-Encoding", "gzip")
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	if dl, ok := ctx.Deadline(); ok {
		h.Set(headerTimeout, encodeTimeout(time.Until(dl)))
	}
	resp, err := f.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Errorf(codes.Unavailable, "grpcx: HTTP path: %v", err)
	}
	return resp, nil
}

// answer reads an HTTP answer into reply and the call's header and
// trailer options.
func (f *HTTPFallback) answer(resp *http.Response, out proto.Message, opts []grpc.CallOption) error {
	defer resp.Body.Close()
	header, trailer := responseMetadata(resp.Header)
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = trailer
		}
	}
	wire := &countingReader{r: resp.Body}
	coding := resp.Header.Get("Content-Encoding")
	body, err := readBody(wire, coding, f.maxBody)
	if err == nil && strings.EqualFold(strings.TrimSpace(coding), "gzip") {
		f.saved(len(body), int(wire.n))
	}
	switch {
	case errors.Is(err, errTooLarge):
		return status.Errorf(codes.ResourceExhausted, "grpcx: HTTP answer larger than %d bytes", f.maxBody)
	case err != nil:
		return status.Errorf(codes.Unavailable, "grpcx: read the HTTP answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return statusOfResponse(resp.StatusCode, resp.Header.Get("Content-Type"), body).Err()
	}
	if err := unmarshal.Unmarshal(body, out); err != nil {
		return status.Errorf(codes.Internal, "grpcx: decode the HTTP answer: %v", err)
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}
