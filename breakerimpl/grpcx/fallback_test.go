package grpcx_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/decisionlog"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	healthscore "github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
)

// twoPaths serves h over gRPC, where a switch can make the path
// unavailable, and over HTTP, where requests are counted.
type twoPaths struct {
	grpcAddr string
	http     *httptest.Server
	down     atomic.Bool  // the gRPC path answers UNAVAILABLE
	hang     atomic.Bool  // the gRPC path answers only when the call's deadline has passed
	overHTTP atomic.Int32 // requests that reached the HTTP path
}

func serveTwoPaths(t *testing.T, h healthpb.HealthServer) *twoPaths {
	t.Helper()
	p := &twoPaths{}
	p.grpcAddr = serveGRPC(t, h, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if p.down.Load() {
			return nil, status.Error(codes.Unavailable, "gRPC path down")
		}
		if p.hang.Load() {
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return handler(ctx, req)
	}))
	p.http = serveHTTP(t, h, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.overHTTP.Add(1)
			next.ServeHTTP(w, r)
		})
	}, grpcx.HTTPHandlerOptions{})
	return p
}

func newFallback(t *testing.T, s grpcx.HTTPFallbackSettings) *grpcx.HTTPFallback {
	f := grpcx.NewHTTPFallback(s)
	t.Cleanup(f.Close)
	return f
}

func TestHTTPFallbackAndBack(t *testing.T) {
	h := &health{}
	p := serveTwoPaths(t, h)
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Second, Clock: clk})
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: p.http.URL, Breaker: cb})
	c := dial(t, p.grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
	ctx := context.Background()
	expect := func(step, source string, reason breakerimpl.Reason) {
		t.Helper()
		res, err := check(ctx, c)
		if err != nil || res.Source != source || res.Reason != reason || res.Value.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("%s: %+v, %v; want %s (%v)", step, res, err, source, reason)
		}
	}
	expect("healthy", breakerimpl.SourcePrimary, breakerimpl.ReasonNone)
	if p.overHTTP.Load() != 0 {
		t.Fatal("a healthy gRPC path sent a call over HTTP")
	}
	p.down.Store(true)
	expect("gRPC down", grpcx.SourceHTTP, breakerimpl.ReasonError)
	expect("gRPC down", grpcx.SourceHTTP, breakerimpl.ReasonError)
	if cb.State() != circuitbreaker.Open {
		t.Fatalf("after two path failures: %v", cb.State())
	}
	before := h.calls.Load()
	expect("breaker open", grpcx.SourceHTTP, breakerimpl.ReasonOpen)
	if h.calls.Load() != before+1 || p.overHTTP.Load() != 3 {
		t.Fatalf("%d calls served, %d over HTTP; while open the call goes over HTTP only", h.calls.Load()-before, p.overHTTP.Load())
	}
	p.down.Store(false)
	clk.Advance(time.Second)
	expect("probe", breakerimpl.SourcePrimary, breakerimpl.ReasonNone)
	expect("back on gRPC", breakerimpl.SourcePrimary, breakerimpl.ReasonNone)
	if cb.State() != circuitbreaker.Closed || p.overHTTP.Load() != 3 || f.ServedOverHTTP() != 3 {
		t.Fatalf("after recovery: %v, %d over HTTP", cb.State(), p.overHTTP.Load())
	}
}

func TestHTTPFallbackConnectionRefused(t *testing.T) {
	h := &health{}
	web := serveHTTP(t, h, nil, grpcx.HTTPHandlerOptions{})
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: web.URL})
	c := dial(t, freeAddr(t), grpc.WithUnaryInterceptor(f.Unary))
	res, err := check(context.Background(), c)
	if err != nil || res.Source != grpcx.SourceHTTP || res.Reason != breakerimpl.ReasonError {
		t.Fatalf("%+v, %v; want the answer over HTTP", res, err)
	}
}

// A failure of the service itself is not the gRPC path's: the caller gets
// it, and the path's breaker counts the answer as the path working.
func TestHTTPFallbackLeavesServiceErrors(t *testing.T) {
	h := &health{check: failWith(codes.Internal)}
	p := serveTwoPaths(t, h)
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{})})
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: p.http.URL, Breaker: cb})
	c := dial(t, p.grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
	if _, err := check(context.Background(), c); status.Code(err) != codes.Internal || p.overHTTP.Load() != 0 || cb.State() != circuitbreaker.Closed {
		t.Fatalf("%v, %d over HTTP, breaker %v", err, p.overHTTP.Load(), cb.State())
	}
}

type switchHealth struct{ ok atomic.Bool }

func (s *switchHealth) Healthy() bool { return s.ok.Load() }

func TestHTTPFallbackHealth(t *testing.T) {
	h := &health{}
	p := serveTwoPaths(t, h)
	sig := &switchHealth{}
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: p.http.URL, Health: sig})
	c := dial(t, p.grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
	res, err := check(context.Background(), c)
	if err != nil || res.Source != grpcx.SourceHTTP || res.Reason != breakerimpl.ReasonOpen || p.overHTTP.Load() != 1 {
		t.Fatalf("unhealthy: %+v, %v, %d over HTTP", res, err, p.overHTTP.Load())
	}
	sig.ok.Store(true)
	if res, err := check(context.Background(), c); err != nil || res.Source != breakerimpl.SourcePrimary {
		t.Fatalf("healthy again: %+v, %v", res, err)
	}
}

// Every code reaches the caller the same over both paths, with its
// message and details; the HTTP answer has the status of HTTPStatus.
func TestOneErrorSemantics(t *testing.T) {
	h := &health{check: func(_ context.Context, _ int32, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		var c codes.Code
		fmt.Sscan(req.Service, &c)
		st, _ := status.New(c, "because "+c.String()).WithDetails(&healthpb.HealthCheckRequest{Service: "detail"})
		return nil, st.Err()
	}}
	grpcAddr := serveGRPC(t, h)
	var statuses sync.Map
	web := serveHTTP(t, h, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			statuses.Store(r.Header.Get("X-Code"), rec.Code)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
	}, grpcx.HTTPHandlerOptions{})
	direct := dial(t, grpcAddr)
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: web.URL, Health: &switchHealth{}}) // always over HTTP
	bridged := dial(t, grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
	// google.rpc.Code's mapping, written out so that the test does not
	// read the table it checks.
	httpOf := map[codes.Code]int{
		codes.Canceled: 499, codes.Unknown: 500, codes.InvalidArgument: 400, codes.DeadlineExceeded: 504,
		codes.NotFound: 404, codes.AlreadyExists: 409, codes.PermissionDenied: 403, codes.ResourceExhausted: 429,
		codes.FailedPrecondition: 400, codes.Aborted: 409, codes.OutOfRange: 400, codes.Unimplemented: 501,
		codes.Internal: 500, codes.Unavailable: 503, codes.DataLoss: 500, codes.Unauthenticated: 401,
	}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		req := &healthpb.HealthCheckRequest{Service: fmt.Sprint(uint32(c))}
		_, gerr := direct.Check(context.Background(), req)
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-code", c.String())
		_, herr := bridged.Check(ctx, req)
		gs, hs := status.Convert(gerr), status.Convert(herr)
		if gs.Code() != c || hs.Code() != c || gs.Message() != hs.Message() || len(hs.Details()) != 1 {
			t.Errorf("%v: over gRPC %v %q, over HTTP %v %q with %d details", c, gs.Code(), gs.Message(), hs.Code(), hs.Message(), len(hs.Details()))
		}
		if got, _ := statuses.Load(c.String()); got != httpOf[c] || grpcx.HTTPStatus(c) != httpOf[c] {
			t.Errorf("%v: HTTP status %v, want %d", c, got, httpOf[c])
		}
	}
}

// An answer without a google.rpc.Status (a proxy's page) gets the code
// CodeOfHTTP gives its status.
func TestHTTPAnswerWithoutStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   codes.Code
	}{{502, codes.Unavailable}, {503, codes.Unavailable}, {404, codes.Unimplemented}, {401, codes.Unauthenticated}, {500, codes.Unknown}, {400, codes.Internal}} {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>bad gateway</html>", tc.status)
		}))
		f := grpcx.NewHTTPFallback(grpcx.HTTPFallbackSettings{BaseURL: proxy.URL, Health: &switchHealth{}})
		c := dial(t, freeAddr(t), grpc.WithUnaryInterceptor(f.Unary))
		_, err := c.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if status.Code(err) != tc.code || !strings.Contains(err.Error(), "bad gateway") {
			t.Errorf("%d: %v, want %v with the page's text", tc.status, err, tc.code)
		}
		f.Close()
		proxy.Close()
	}
}

// list is a health service whose List answer is large.
type list struct{ health }

func (l *list) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	resp := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for i := range 200 {
		resp.Statuses[fmt.Sprintf("service-%03d", i)] = serving
	}
	return resp, nil
}

// codings records the Content-Encoding of the bodies that pass.
type codings struct {
	mu   sync.Mutex
	seen []string
}

func (c *codings) add(v string) {
	c.mu.Lock()
	c.seen = append(c.seen, v)
	c.mu.Unlock()
}

func (c *codings) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

func TestHTTPPathGzip(t *testing.T) {
	var requests, answers codings
	refuseGzip := atomic.Bool{}
	web := serveHTTP(t, &list{}, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.add(r.Header.Get("Content-Encoding"))
			if refuseGzip.Load() && r.Header.Get("Content-Encoding") == "gzip" {
				w.Header().Set("Accept-Encoding", "identity")
				w.WriteHeader(http.StatusUnsupportedMediaType)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, grpcx.HTTPHandlerOptions{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(req)
		if err == nil {
			answers.add(resp.Header.Get("Content-Encoding"))
		}
		return resp, err
	})}
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: web.URL, Client: client, Health: &switchHealth{}})
	c := dial(t, freeAddr(t), grpc.WithUnaryInterceptor(f.Unary))
	ctx := context.Background()
	big := &healthpb.HealthCheckRequest{Service: strings.Repeat("checkout ", 200)}
	small := &healthpb.HealthCheckRequest{Service: "cart"}
	for _, req := range []*healthpb.HealthCheckRequest{big, big, small} {
		if _, err := c.Check(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// The first request cannot know the server takes gzip; its answer says
	// so; a small body is not worth compressing.
	if got := strings.Join(requests.get(), ","); got != ",gzip," {
		t.Fatalf("request codings %q, want identity, gzip, identity", got)
	}
	// The gzipped request of 1,800 bytes of "checkout " shrank to a few
	// dozen.
	savedOnRequest := f.GzipSavedBytes()
	if savedOnRequest < 1500 {
		t.Fatalf("gzip saved %d bytes on the big request, want most of its 1,800", savedOnRequest)
	}
	resp, err := c.List(ctx, &healthpb.HealthListRequest{})
	if err != nil || len(resp.Statuses) != 200 {
		t.Fatalf("List: %d statuses, %v", len(resp.GetStatuses()), err)
	}
	if f.GzipSavedBytes() <= savedOnRequest+1000 {
		t.Fatalf("gzip saved %d bytes after a large gzipped answer, %d before", f.GzipSavedBytes(), savedOnRequest)
	}
	if got := answers.get(); got[len(got)-1] != "gzip" || got[0] != "" {
		t.Fatalf("answer codings %q: want the small answers plain and the large one gzipped", got)
	}
	// A server that refuses gzipped bodies (415) gets the body again,
	// uncompressed, in the same call.
	refuseGzip.Store(true)
	n := len(requests.get())
	if _, err := c.Check(ctx, big); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(requests.get()[n:], ","); got != "gzip," {
		t.Fatalf("after a 415: %q, want the gzipped body refused and sent again plain", got)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHTTPPathMetadataAndDeadline(t *testing.T) {
	type seen struct {
		user     string
		deadline time.Duration
	}
	got := make(chan seen, 1)
	h := &health{check: func(ctx context.Context, _ int32, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		dl, _ := ctx.Deadline()
		got <- seen{strings.Join(md.Get("x-user"), ","), time.Until(dl)}
		grpc.SetHeader(ctx, metadata.Pairs("x-served-by", "replica-2"))
		grpc.SetTrailer(ctx, metadata.Pairs("x-cost", "3"))
		return serving, nil
	}}
	web := serveHTTP(t, h, nil, grpcx.HTTPHandlerOptions{})
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: web.URL, Health: &switchHealth{}})
	c := dial(t, freeAddr(t), grpc.WithUnaryInterceptor(f.Unary))
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-user", "ada"), 5*time.Second)
	defer cancel()
	var header, trailer metadata.MD
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer)); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.user != "ada" || s.deadline <= 0 || s.deadline > 5*time.Second {
		t.Fatalf("the server saw x-user %q and a deadline in %v", s.user, s.deadline)
	}
	if header.Get("x-served-by")[0] != "replica-2" || trailer.Get("x-cost")[0] != "3" {
		t.Fatalf("header %v, trailer %v", header, trailer)
	}
}

func TestHTTPHandlerRefusals(t *testing.T) {
	web := serveHTTP(t, &health{}, nil, grpcx.HTTPHandlerOptions{MaxMessageSize: 64})
	for _, tc := range []struct {
		name, method, path, coding, body string
		status                           int
	}{
		{"unknown method", "POST", "/grpc.health.v1.Health/Nope", "", "{}", 501},
		{"streaming method", "POST", "/grpc.health.v1.Health/Watch", "", "{}", 501},
		{"GET", "GET", "/grpc.health.v1.Health/Check", "", "", 501},
		{"bad JSON", "POST", "/grpc.health.v1.Health/Check", "", "{", 400},
		{"unknown coding", "POST", "/grpc.health.v1.Health/Check", "br", "{}", 415},
		{"too large", "POST", "/grpc.health.v1.Health/Check", "", `{"service":"` + strings.Repeat("x", 100) + `"}`, 429},
		{"ok", "POST", "/grpc.health.v1.Health/Check", "", `{"service":"a","unknownField":1}`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, web.URL+tc.path, strings.NewReader(tc.body))
			if tc.coding != "" {
				req.Header.Set("Content-Encoding", tc.coding)
			}
			resp, err := web.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("Accept-Encoding") != "gzip" {
				t.Fatalf("%d %q (Accept-Encoding %q), want %d", resp.StatusCode, body, resp.Header.Get("Accept-Encoding"), tc.status)
			}
		})
	}
}

// A *health.Score as the Health learns from the gRPC path's attempts:
// failures make it unhealthy, calls then go over HTTP without touching
// gRPC, and once its window has slid past them the calls come back.
func TestHTTPFallbackHealthScore(t *testing.T) {
	h := &health{}
	p := serveTwoPaths(t, h)
	clk := clock.NewFake(time.Time{})
	score := healthscore.New(healthscore.Settings{MinRequests: 4, Window: time.Second, Buckets: 10, Refresh: time.Millisecond, Clock: clk})
	// A breaker that would not open on its own: the score decides.
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 100}, Clock: clk})
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: p.http.URL, Breaker: cb, Health: score})
	c := dial(t, p.grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
	call := func(step, source string, reason breakerimpl.Reason) {
		t.Helper()
		clk.Advance(2 * time.Millisecond) // past the score's Refresh
		res, err := check(context.Background(), c)
		if err != nil || res.Source != source || res.Reason != reason {
			t.Fatalf("%s: %+v, %v; want %s (%v)", step, res, err, source, reason)
		}
	}
	for range 4 {
		call("healthy", breakerimpl.SourcePrimary, breakerimpl.ReasonNone)
	}
	p.down.Store(true)
	for range 4 {
		call("gRPC down", grpcx.SourceHTTP, breakerimpl.ReasonError)
	}
	if clk.Advance(2 * time.Millisecond); score.Healthy() {
		t.Fatalf("half the window's calls failed and the score says healthy: %+v", score.Report())
	}
	p.down.Store(false) // a call that tried gRPC now would be served there
	call("unhealthy", grpcx.SourceHTTP, breakerimpl.ReasonOpen)
	clk.Advance(1100 * time.Millisecond)
	call("window slid past the failures", breakerimpl.SourcePrimary, breakerimpl.ReasonNone)
	if cb.State() != circuitbreaker.Closed {
		t.Fatalf("breaker %v", cb.State())
	}
}

// A gRPC path that hangs moves calls to HTTP after ConsecutiveTimeouts
// attempts in a row ran out of time, each of which the path's breaker also
// counts as a failure; after the open duration a probe brings the calls
// back. With ConsecutiveTimeouts below zero, timeouts say nothing and the
// calls stay on gRPC.
func TestHTTPFallbackConsecutiveTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		timeouts     int
		wantOverHTTP bool
	}{
		{"default 3", 0, true},
		{"2", 2, true},
		{"never", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &health{}
			p := serveTwoPaths(t, h)
			clk := clock.NewFake(time.Time{})
			cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 100}, OpenDuration: time.Second, Clock: clk})
			f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: p.http.URL, Breaker: cb, ConsecutiveTimeouts: tc.timeouts})
			c := dial(t, p.grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
			call := func() (breakerimpl.Result[*healthpb.HealthCheckResponse], error) {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				return check(ctx, c)
			}
			if res, err := call(); err != nil || res.Source != breakerimpl.SourcePrimary {
				t.Fatalf("healthy: %+v, %v", res, err)
			}
			p.hang.Store(true)
			n := tc.timeouts
			if n <= 0 {
				n = grpcx.DefaultConsecutiveTimeouts
			}
			for i := range n {
				if _, err := call(); status.Code(err) != codes.DeadlineExceeded {
					t.Fatalf("timeout %d: %v, want DEADLINE_EXCEEDED", i+1, err)
				}
			}
			res, err := call()
			if !tc.wantOverHTTP {
				if status.Code(err) != codes.DeadlineExceeded || p.overHTTP.Load() != 0 || f.TimeoutBreaker() != nil || cb.Snapshot().Failures != 0 {
					t.Fatalf("timeouts say nothing: %+v, %v, %d over HTTP, %d breaker failures", res, err, p.overHTTP.Load(), cb.Snapshot().Failures)
				}
				return
			}
			if err != nil || res.Source != grpcx.SourceHTTP || res.Reason != breakerimpl.ReasonOpen || p.overHTTP.Load() != 1 {
				t.Fatalf("after %d timeouts in a row: %+v, %v, %d over HTTP; want the call over HTTP", n, res, err, p.overHTTP.Load())
			}
			if got := cb.Snapshot().Failures; got != uint64(n) {
				t.Errorf("the path's breaker counted %d failures, want the %d timeouts", got, n)
			}
			if f.TimeoutBreaker().State() != circuitbreaker.Open {
				t.Errorf("timeout breaker %v, want open", f.TimeoutBreaker().State())
			}
			p.hang.Store(false)
			clk.Advance(time.Second)
			if res, err := call(); err != nil || res.Source != breakerimpl.SourcePrimary {
				t.Fatalf("probe after the open duration: %+v, %v; want gRPC", res, err)
			}
			if res, err := call(); err != nil || res.Source != breakerimpl.SourcePrimary || f.TimeoutBreaker().State() != circuitbreaker.Closed {
				t.Fatalf("back on gRPC: %+v, %v, %v", res, err, f.TimeoutBreaker().State())
			}
		})
	}
}

// The decision log, installed, gets the gRPC path's refusals and the
// answers over HTTP, with when calls were switched to HTTP.
func TestHTTPFallbackDecisionLog(t *testing.T) {
	var buf syncBuffer
	decisionlog.New(decisionlog.Settings{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}).Install()
	t.Cleanup(func() { otelx.SetSink(nil) })
	p := serveTwoPaths(t, &health{})
	clk := clock.NewFake(time.Date(2026, 12, 5, 5, 0, 0, 0, time.UTC))
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "recs-grpc", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, Clock: clk})
	f := newFallback(t, grpcx.HTTPFallbackSettings{BaseURL: p.http.URL, Breaker: cb, Name: "recs"})
	c := dial(t, p.grpcAddr, grpc.WithUnaryInterceptor(f.Unary))
	p.down.Store(true)
	for range 2 {
		if res, err := check(context.Background(), c); err != nil || res.Source != grpcx.SourceHTTP {
			t.Fatalf("%+v %v", res, err)
		}
	}
	out := buf.String()
	for _, want := range []string{
		`"kind":"fallback","reason":"error","name":"recs","source":"http","switched_at":`,
		`"level":"WARN","msg":"breakerimpl decision","kind":"breaker","reason":"open","name":"recs"`,
		`"kind":"fallback","reason":"open","name":"recs","source":"http","switched_at":"2026-12-05T05:00:00Z"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("decision log lacks %s:\n%s", want, out)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the log's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
