// Package recommend is the demo's downstream dependency: a recommendations
// service the demo starts on a loopback port of its own and calls over real
// HTTP, so the client side of breakerimpl (timeout, retry, bulkhead,
// breaker) is exercised over the network. Its failpoint
// (recommendationsCall) sits in the upstream handler: a fault makes the
// dependency slow or broken, exactly as the demo's client sees it.
package recommend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pingcap/failpoint"

	"github.com/chaoskit/chaoskit/inject"
)

// List is a recommendation answer.
type List struct {
	ProductID int   `json:"product_id"`
	Items     []int `json:"items"`
}

// Upstream is the recommendations service.
type Upstream struct {
	products int
	calls    atomic.Int64
}

// NewUpstream returns a service recommending among products products.
func NewUpstream(products int) *Upstream { return &Upstream{products: products} }

// Calls is how many requests reached the upstream.
func (u *Upstream) Calls() int64 { return u.calls.Load() }

// ServeHTTP answers GET /recommendations/{id}.
func (u *Upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	ctx := r.Context()
	var status int
	failpoint.Inject("recommendationsCall", func(v failpoint.Value) {
		err := inject.Fire(ctx, v)
		var se *inject.StatusError
		switch {
		case errors.As(err, &se):
			status = se.Code
		case err != nil:
			status = http.StatusInternalServerError
		}
	})
	if ctx.Err() != nil {
		return // the caller gave up
	}
	if status != 0 {
		if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, "recommendations failed", status)
		return
	}
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id <= 0 {
		http.Error(w, "bad product id", http.StatusBadRequest)
		return
	}
	l := List{ProductID: id}
	for i := 1; i <= 4; i++ {
		l.Items = append(l.Items, (id+i*7-1)%u.products+1)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(l)
}

// Start serves u on a free loopback port until ctx ends; it returns the base
// URL and a function that waits for the server to stop.
func Start(ctx context.Context, u *Upstream) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /recommendations/{id}", u)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	wait := func() {
		stop()
		_ = srv.Close()
		<-done
	}
	return "http://" + ln.Addr().String(), wait, nil
}

// StatusError is a non-2xx answer from the upstream.
type StatusError struct {
	Code int
	// RetryAfter is the upstream's Retry-After, zero if none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return fmt.Sprintf("recommendations upstream: %d", e.Code) }

// Client calls the upstream.
type Client struct {
	Base string
	HTTP *http.Client
}

// Get fetches the recommendations for product id.
func (c *Client) Get(ctx context.Context, id int) (List, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/recommendations/"+strconv.Itoa(id), nil)
	if err != nil {
		return List{}, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return List{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		se := &StatusError{Code: resp.StatusCode}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			se.RetryAfter = time.Duration(s) * time.Second
		}
		return List{}, se
	}
	var l List
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&l); err != nil {
		return List{}, fmt.Errorf("recommendations upstream: %w", err)
	}
	return l, nil
}
