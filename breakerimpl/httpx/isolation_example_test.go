package httpx_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/hedge"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// A report endpoint that may run one request at a time: a second request
// that arrives while the first runs is turned away at once.
func ExampleBulkhead() {
	started, release := make(chan struct{}), make(chan struct{})
	report := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "report")
	})
	h := httpx.Bulkhead(bulkhead.New(bulkhead.Settings{Name: "reports", MaxConcurrent: 1}))(report)

	first := httptest.NewRecorder()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.ServeHTTP(first, httptest.NewRequest("GET", "/report", nil)) }()
	<-started
	second := httptest.NewRecorder()
	h.ServeHTTP(second, httptest.NewRequest("GET", "/report", nil))
	close(release)
	wg.Wait()
	fmt.Println(first.Code, first.Body.String())
	fmt.Println(second.Code, "Retry-After:", second.Header().Get("Retry-After"))
	// Output:
	// 200 report
	// 503 Retry-After: 1
}

// Isolate puts any guard in front of a handler. Here a breaker trips only on
// the gateway errors of the dependency behind the handler (502 and above),
// not on the handler's own 500s.
func ExampleIsolate() {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "payments", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1},
		OpenDuration: 30 * time.Second, Clock: clock.NewFake(time.Time{}),
	})
	statuses := []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusOK}
	var n atomic.Int32
	pay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(statuses[n.Add(1)-1])
	})
	h := httpx.Isolate(cb, httpx.IsolationOptions{
		Failed: func(status int) bool { return status >= http.StatusBadGateway },
	})(pay)
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/pay", nil))
		fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"), cb.State())
	}
	// Output:
	// 500 Retry-After:  closed
	// 502 Retry-After:  open
	// 503 Retry-After: 30 open
}

// A client whose requests, body included, must finish within 50 ms.
func ExampleWithTimeout() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a backend that hangs until the client gives up
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer backend.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: httpx.WithTimeout(base, timeout.New(timeout.Settings{Name: "search", Timeout: 50 * time.Millisecond}))}

	_, err := client.Get(backend.URL)
	fmt.Println(errors.Is(err, timeout.ErrTimeout), errors.Is(err, context.DeadlineExceeded))
	// Output: true true
}

// A GET that gets no answer within 10 ms is sent again; the first answer
// wins and the other request is cancelled.
func ExampleWithHedge() {
	var n atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			<-r.Context().Done() // a replica that hangs
			return
		}
		io.WriteString(w, "from the hedge")
	}))
	defer backend.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: httpx.WithHedge(base, hedge.New(hedge.Settings{Name: "profiles", Delay: 10 * time.Millisecond}))}

	resp, err := client.Get(backend.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 from the hedge
}

func ExampleRetryAfterSeconds() {
	for _, d := range []time.Duration{0, 200 * time.Millisecond, 1500 * time.Millisecond, 30 * time.Second} {
		fmt.Printf("%v → Retry-After: %d\n", d, httpx.RetryAfterSeconds(d))
	}
	// Output:
	// 0s → Retry-After: 1
	// 200ms → Retry-After: 1
	// 1.5s → Retry-After: 2
	// 30s → Retry-After: 30
}
