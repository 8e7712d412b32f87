package httpx_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
)

func ExampleBreaker() {
	products := circuitbreaker.New(circuitbreaker.Settings{
		Name:         "products",
		Rule:         circuitbreaker.ConsecutiveFailures{Threshold: 1},
		OpenDuration: 30 * time.Second,
		Clock:        clock.NewFake(time.Time{}),
	})
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database down", http.StatusInternalServerError)
	})
	mux := http.NewServeMux()
	mux.Handle("GET /products/{id}", httpx.Breaker(products, httpx.ServerOptions{})(failing))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	for range 2 {
		resp, err := srv.Client().Get(srv.URL + "/products/7")
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%d Retry-After=%q\n", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Output:
	// 500 Retry-After=""
	// 503 Retry-After="30"
}

func ExampleBreakerTransport() {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer backend.Close()
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Name: "recommendations", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1},
		Clock: clock.NewFake(time.Time{}),
	})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &httpx.BreakerTransport{
		Breaker: cb,
		Base:    base,
		Fallback: func(req *http.Request, err error) (*http.Response, error) {
			rec := httptest.NewRecorder()
			io.WriteString(rec, "[]") // no recommendations rather than an error page
			return rec.Result(), nil
		},
	}}
	for range 2 {
		resp, err := client.Get(backend.URL)
		if err != nil {
			fmt.Println(err)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body), cb.State())
	}
	// Output:
	// 200 [] open
	// 200 [] open
}

func ExampleRejectResponse() {
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "search", OpenDuration: 1500 * time.Millisecond, Clock: clock.NewFake(time.Time{})})
	cb.ForceOpen("maintenance")
	rec := httptest.NewRecorder()
	httpx.RejectResponse(rec, httptest.NewRequest("GET", "/", nil), cb, circuitbreaker.ErrOpen)
	fmt.Print(rec.Code, " ", rec.Header().Get("Retry-After"), " ", rec.Body.String())
	// Output: 503 1 service unavailable: circuit breaker "search" refused the request (open)
}
