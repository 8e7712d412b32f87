package httpx_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// get sends a GET over loopback and returns the status, the Retry-After
// header and the body.
func get(t *testing.T, c *http.Client, url string) (int, string, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
}

func TestServerBreaker(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "products", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2},
		OpenDuration: 2500 * time.Millisecond, Clock: clk,
	})
	var status atomic.Int32
	status.Store(http.StatusInternalServerError)
	var served atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.WriteHeader(int(status.Load()))
		io.WriteString(w, "from the handler")
	})
	mux := http.NewServeMux()
	mux.Handle("/products", httpx.Breaker(cb, httpx.ServerOptions{})(handler))
	mux.Handle("/other", handler) // not guarded
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := srv.Client()

	for range 2 {
		if code, _, body := get(t, c, srv.URL+"/products"); code != 500 || body != "from the handler" {
			t.Fatalf("closed: %d %q, want the handler's 500", code, body)
		}
	}
	if cb.State() != circuitbreaker.Open {
		t.Fatalf("after two 500s: %v, want open", cb.State())
	}
	clk.Advance(time.Second)
	code, retry, body := get(t, c, srv.URL+"/products")
	if code != http.StatusServiceUnavailable || retry != "2" || !strings.Contains(body, `"products"`) || !strings.Contains(body, "open") {
		t.Fatalf("open: %d, Retry-After %q, %q; want 503, 2 (1.5 s rounded up)", code, retry, body)
	}
	if served.Load() != 2 {
		t.Fatalf("handler ran %d times, want 2: an open breaker must not call it", served.Load())
	}
	if code, _, _ := get(t, c, srv.URL+"/other"); code != 500 {
		t.Fatalf("unguarded route: %d", code)
	}

	clk.Advance(1500 * time.Millisecond)
	status.Store(http.StatusOK)
	if code, _, _ := get(t, c, srv.URL+"/products"); code != 200 {
		t.Fatalf("probe: %d, want the handler's 200", code)
	}
	if cb.State() != circuitbreaker.Closed {
		t.Fatalf("after a good probe: %v, want closed", cb.State())
	}
	if code, _, _ := get(t, c, srv.URL+"/products"); code != 200 {
		t.Fatalf("closed again: %d", code)
	}
	c.CloseIdleConnections()
}

func TestServerBreakerHalfOpenFull(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: time.Second, Clock: clk,
	})
	cb.ForceOpen("test")
	cb.ResumeAutomatic("test") // half-open: one probe slot
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(httpx.Breaker(cb, httpx.ServerOptions{})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})))
	defer srv.Close()
	c := srv.Client()
	done := make(chan int)
	go func() {
		code, _, _ := get(t, c, srv.URL)
		done <- code
	}()
	<-entered // the probe holds the only slot
	code, retry, body := get(t, c, srv.URL)
	if code != http.StatusServiceUnavailable || retry != "1" || !strings.Contains(body, "half-open-full") {
		t.Fatalf("second request while the probe runs: %d, Retry-After %q, %q", code, retry, body)
	}
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("probe: %d", code)
	}
	c.CloseIdleConnections()
}

func TestServerBreakerCountsPanics(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{}),
	})
	srv := httptest.NewUnstartedServer(httpx.Breaker(cb, httpx.ServerOptions{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler) // the server recovers it without logging
	})))
	srv.Start()
	defer srv.Close()
	if _, err := srv.Client().Get(srv.URL); err == nil {
		t.Fatal("a panicking handler's request succeeded")
	}
	if got := cb.State(); got != circuitbreaker.Open {
		t.Fatalf("after a panic: %v, want open", got)
	}
	srv.Client().CloseIdleConnections()
}

func TestServerBreakerCustomFailureAndRejection(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{}),
	})
	mw := httpx.Breaker(cb, httpx.ServerOptions{
		IsFailure: func(status int) bool { return status == http.StatusTooManyRequests },
		Rejected: func(w http.ResponseWriter, r *http.Request, cb *circuitbreaker.Breaker, err error) {
			http.Error(w, "busy", http.StatusTooManyRequests)
		},
	})
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	})))
	defer srv.Close()
	get(t, srv.Client(), srv.URL)
	if code, retry, body := get(t, srv.Client(), srv.URL); code != 429 || retry != "" || body != "busy\n" {
		t.Fatalf("custom rejection: %d %q %q", code, retry, body)
	}
	srv.Client().CloseIdleConnections()
}

func TestBreakerTransport(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusBadGateway)
	var hits atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(int(status.Load()))
		io.WriteString(w, "backend")
	}))
	defer backend.Close()
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: time.Second, Clock: clk,
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpx.BreakerTransport{Breaker: cb, Base: base}}

	for range 2 { // 5xx responses reach the caller, and count as failures
		if code, _, body := get(t, client, backend.URL); code != 502 || body != "backend" {
			t.Fatalf("closed: %d %q", code, body)
		}
	}
	_, err := client.Get(backend.URL)
	if !errors.Is(err, circuitbreaker.ErrOpen) {
		t.Fatalf("open: %v, want ErrOpen", err)
	}
	if hits.Load() != 2 {
		t.Fatalf("backend hit %d times, want 2: an open breaker must not call it", hits.Load())
	}
	clk.Advance(time.Second)
	status.Store(http.StatusOK)
	if code, _, _ := get(t, client, backend.URL); code != 200 || cb.State() != circuitbreaker.Closed {
		t.Fatalf("probe: %d, breaker %v", code, cb.State())
	}
}

func TestBreakerTransportTimeoutsAreFailures(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hangs until the client gives up
	}))
	defer backend.Close()
	var events []circuitbreaker.StateChange
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, Clock: clock.NewFake(time.Time{}),
		OnStateChange: func(e circuitbreaker.StateChange) { events = append(events, e) },
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpx.BreakerTransport{Breaker: cb, Base: base}}

	// A context deadline and http.Client.Timeout: both are timeouts.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", backend.URL, nil)
	if _, err := client.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	timed := &http.Client{Transport: client.Transport, Timeout: 20 * time.Millisecond}
	if _, err := timed.Get(backend.URL); err == nil {
		t.Fatal("client timeout: no error")
	}
	if cb.State() != circuitbreaker.Open || events[0].Counts.ConsecutiveFailures != 2 {
		t.Fatalf("after two timeouts: %v, events %+v", cb.State(), events)
	}

	// A request the caller cancels says nothing about the backend.
	cb.ForceClosed("")
	cb.ResumeAutomatic("")
	before := cb.Snapshot()
	ctx, cancel = context.WithCancel(context.Background())
	req, _ = http.NewRequestWithContext(ctx, "GET", backend.URL, nil)
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := client.Do(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if s := cb.Snapshot(); s.Ignored != before.Ignored+1 || s.Failures != before.Failures {
		t.Fatalf("a cancelled request was counted: %+v", s)
	}
}

func TestBreakerTransportFallback(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer backend.Close()
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{}),
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	var reasons []string
	client := &http.Client{Transport: &httpx.BreakerTransport{
		Breaker: cb, Base: base,
		Fallback: func(req *http.Request, err error) (*http.Response, error) {
			reasons = append(reasons, breakerimpl.ReasonOf(err).String())
			rec := httptest.NewRecorder()
			rec.Header().Set("X-Source", "fallback")
			io.WriteString(rec, "[]")
			return rec.Result(), nil
		},
	}}
	for range 2 { // the failed call, then the open breaker
		resp, err := client.Get(backend.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Source") != "fallback" || string(body) != "[]" {
			t.Fatalf("fallback response: %d %v %q", resp.StatusCode, resp.Header, body)
		}
	}
	if strings.Join(reasons, ",") != "error,open" {
		t.Fatalf("fallback reasons %v, want error then open", reasons)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, -1: 1, time.Nanosecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, time.Minute: 60} {
		if got := httpx.RetryAfterSeconds(d); got != want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}
