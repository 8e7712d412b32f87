package httpx_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// flaky answers 503 with Retry-After: 2 to its first failures requests,
// then echoes the method and body; it counts the requests.
func flaky(failures int32, n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if n.Add(1) <= failures {
			w.Header().Set("Retry-After", "2")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, r.Method+" "+string(body))
	})
}

func TestRetryTransport(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      func(url string) *http.Request
		failures int32
		attempts int32
		status   int
		body     string
	}{
		{"GET retried", func(url string) *http.Request { r, _ := http.NewRequest("GET", url, nil); return r },
			2, 3, 200, "GET "},
		{"PUT body sent again", func(url string) *http.Request {
			r, _ := http.NewRequest("PUT", url, strings.NewReader("item=7"))
			return r
		}, 1, 2, 200, "PUT item=7"},
		{"POST not retried", func(url string) *http.Request {
			r, _ := http.NewRequest("POST", url, strings.NewReader("order"))
			return r
		}, 1, 1, 503, "busy\n"},
		{"POST with an idempotency key retried", func(url string) *http.Request {
			r, _ := http.NewRequest("POST", url, strings.NewReader("order"))
			r.Header.Set("Idempotency-Key", "k1")
			return r
		}, 1, 2, 200, "POST order"},
		{"attempts spent: the last 503 as it is", func(url string) *http.Request { r, _ := http.NewRequest("GET", url, nil); return r },
			10, 3, 503, "busy\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv, c := serve(t, flaky(tc.failures, &n))
			clk := clock.NewInstant(time.Time{})
			r := retry.New(retry.Settings{MaxAttempts: 3, Backoff: time.Millisecond, Clock: clk})
			c.Transport = httpx.WithRetry(c.Transport, r, httpx.RetryOptions{})
			resp, err := c.Do(tc.req(srv.URL))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || string(body) != tc.body || n.Load() != tc.attempts {
				t.Fatalf("%d %q after %d requests; want %d %q after %d", resp.StatusCode, body, n.Load(), tc.status, tc.body, tc.attempts)
			}
			for _, w := range clk.Waits() {
				if w != 2*time.Second {
					t.Fatalf("waits %v, want the server's Retry-After of 2 s each", clk.Waits())
				}
			}
		})
	}
}

func TestTimeoutTransportCancelsTheRequest(t *testing.T) {
	cancelled := make(chan struct{})
	srv, c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // a hung dependency; it sees the client give up
		close(cancelled)
	}))
	tm := timeout.New(timeout.Settings{Timeout: 50 * time.Millisecond, Clock: clock.Real()})
	c.Transport = httpx.WithTimeout(c.Transport, tm)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	_, err := c.Do(req)
	if !errors.Is(err, timeout.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want a timeout", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request cancelled")
	}
	if tm.Snapshot().TimedOut != 1 {
		t.Fatalf("snapshot %+v", tm.Snapshot())
	}
}

func TestTimeoutTransportLetsTheBodyBeRead(t *testing.T) {
	srv, c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		time.Sleep(20 * time.Millisecond)
		io.WriteString(w, "late body")
	}))
	c.Transport = httpx.WithTimeout(c.Transport, timeout.New(timeout.Settings{Timeout: 5 * time.Second, Clock: clock.Real()}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "late body" {
		t.Fatalf("body %q, %v", body, err)
	}
}

func TestHedgeTransport(t *testing.T) {
	var n atomic.Int32
	firstCancelled := make(chan struct{})
	srv, c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // the slow replica
			close(firstCancelled)
			return
		}
		w.(http.Flusher).Flush()
		time.Sleep(10 * time.Millisecond) // the winner's body comes after RoundTrip returns
		io.WriteString(w, "from the hedge")
	}))
	h := hedge.New(hedge.Settings{Delay: 20 * time.Millisecond, Clock: clock.Real()})
	c.Transport = httpx.WithHedge(c.Transport, h)
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "from the hedge" {
		t.Fatalf("body %q, %v", body, err)
	}
	select {
	case <-firstCancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow copy was never cancelled")
	}
	if s := h.Snapshot(); s.Hedges != 1 || s.HedgeWins != 1 {
		t.Fatalf("snapshot %+v", s)
	}

	// A POST is not hedged.
	n.Store(1)
	resp, err = c.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n.Load() != 2 {
		t.Fatalf("%d requests for one POST", n.Load()-1)
	}
}

// A client whose requests are bounded to 2 s in all, retried with a budget
// (idempotent methods only), and hedged after 50 ms.
func ExampleWithRetry() {
	budget := retry.NewBudget(retry.BudgetSettings{Ratio: 0.1})
	client := &http.Client{Transport: httpx.WithTimeout(
		httpx.WithRetry(
			httpx.WithHedge(http.DefaultTransport, hedge.New(hedge.Settings{Delay: 50 * time.Millisecond})),
			retry.New(retry.Settings{MaxAttempts: 3, Budget: budget}),
			httpx.RetryOptions{}),
		timeout.New(timeout.Settings{Timeout: 2 * time.Second}))}
	_ = client // client.Get("http://inventory.internal/items/1")
}
