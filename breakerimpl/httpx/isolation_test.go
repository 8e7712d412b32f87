package httpx_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// serve starts a loopback server and returns a client for it; both are
// closed when the test ends.
func serve(t *testing.T, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return srv, &http.Client{Transport: tr}
}

func getCode(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

func TestBulkheadMiddleware(t *testing.T) {
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	srv, c := serve(t, httpx.Bulkhead(b)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
	})))
	done := make(chan int)
	go func() {
		code, _ := getCode(t, c, srv.URL+"/slow")
		done <- code
	}()
	<-entered
	if code, ra := getCode(t, c, srv.URL+"/fast"); code != http.StatusServiceUnavailable || ra != "1" {
		t.Fatalf("with the slot taken: %d, Retry-After %q; want 503, 1", code, ra)
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("slow request: %d", code)
	}
	if code, _ := getCode(t, c, srv.URL+"/fast"); code != http.StatusOK {
		t.Fatalf("after the release: %d", code)
	}
}

func TestRateLimitMiddleware(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	lim := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 0.5, Burst: 1, Clock: clk})
	srv, c := serve(t, httpx.RateLimit(lim)(ok))
	if code, _ := getCode(t, c, srv.URL); code != http.StatusOK {
		t.Fatalf("first: %d", code)
	}
	if code, ra := getCode(t, c, srv.URL); code != http.StatusTooManyRequests || ra != "2" {
		t.Fatalf("second: %d, Retry-After %q; want 429, 2 (a token every 2 s)", code, ra)
	}
	clk.Advance(2 * time.Second)
	if code, _ := getCode(t, c, srv.URL); code != http.StatusOK {
		t.Fatalf("after 2 s: %d", code)
	}
}

type switchCPU struct{ bits atomic.Uint64 }

func (c *switchCPU) Usage() float64 { return math.Float64frombits(c.bits.Load()) }

func TestShedMiddleware(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	cpu := &switchCPU{}
	s := shed.New(shed.Settings{CPU: cpu, Clock: clk})
	srv, c := serve(t, httpx.Shed(s)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	})))
	getCode(t, c, srv.URL+"/fail")
	clk.Advance(time.Second)
	if snap := s.Snapshot(); snap.MinRT != 0 || snap.InFlight != 0 {
		t.Fatalf("after a 500: %+v; a failure gives no latency", snap)
	}
	getCode(t, c, srv.URL+"/")
	clk.Advance(time.Second)
	if snap := s.Snapshot(); snap.MinRT == 0 {
		t.Fatalf("after a 200: %+v; a success gives its latency", snap)
	}

	// Pile up requests in flight on a cool CPU, then heat it: the next
	// request over HTTP is dropped.
	var held []breakerimpl.Permit
	for range 60 {
		p, err := s.Allow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	for _, p := range held[:10] {
		p.Done(io.ErrUnexpectedEOF)
	}
	cpu.bits.Store(math.Float64bits(0.99))
	if code, ra := getCode(t, c, srv.URL+"/"); code != http.StatusServiceUnavailable || ra != "1" {
		t.Fatalf("overloaded: %d, Retry-After %q; want 503, 1", code, ra)
	}
	for _, p := range held[10:] {
		p.Done(nil)
	}
}

// A panicking handler still gives its slot back.
func TestIsolatePanic(t *testing.T) {
	b := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	h := httpx.Isolate(b, httpx.IsolationOptions{})(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	func() {
		defer func() { recover() }()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if s := b.Snapshot(); s.InFlight != 0 {
		t.Fatalf("%d in flight after a panic", s.InFlight)
	}
}

// An endpoint behind a load shedder and a rate limiter, as middleware.
func ExampleShed() {
	shedder := shed.New(shed.Settings{Name: "api"}) // this process's CPU
	defer shedder.Close()
	limiter := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Name: "api", Rate: 500, Burst: 50})
	var handler http.Handler = ok
	handler = httpx.RateLimit(limiter)(handler) // 429 with Retry-After
	handler = httpx.Shed(shedder)(handler)      // 503 with Retry-After, outermost
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/items/1", nil))
	fmt.Println(rec.Code, rec.Body.String())
	// Output: 200 ok
}
