package otelx_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/otelx"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// events returns "name reason" of every event of the spans exported.
func events(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		for _, e := range s.Events {
			reason := ""
			for _, a := range e.Attributes {
				if a.Key == otelx.ReasonKey {
					reason = a.Value.AsString()
				}
			}
			out = append(out, e.Name+" "+reason)
		}
	}
	return out
}

// traced starts a span around each request, as otelhttp would.
func traced(tr trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tr.Start(r.Context(), r.URL.Path)
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Every refusal of the server middleware is an event on the request's span.
func TestServerDecisionEvents(t *testing.T) {
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "products", Clock: clock.NewFake(time.Time{})})
	cb.ForceOpen("test")
	full := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1})
	if _, err := full.Allow(context.Background()); err != nil {
		t.Fatal(err)
	}
	empty := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 0, Burst: 1, Clock: clock.NewFake(time.Time{})})
	if _, err := empty.Allow(context.Background()); err != nil { // the one token
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mw   func(http.Handler) http.Handler
		want string
	}{
		{"breaker", httpx.Breaker(cb, httpx.ServerOptions{}), "breakerimpl.breaker open"},
		{"bulkhead", httpx.Bulkhead(full), "breakerimpl.bulkhead rejected"},
		{"rate limit", httpx.RateLimit(empty), "breakerimpl.ratelimit rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)).Tracer("test")
			h := traced(tr, tc.mw(ok))
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
			if got := events(exp); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
		})
	}
}

// The client transports record their decisions on the span of the
// request's context, over real loopback requests.
func TestClientDecisionEvents(t *testing.T) {
	srv, c := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Retry-After", "0")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}))
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "recs", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, Clock: clock.NewFake(time.Time{})})
	base := c.Transport
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
		path string
		want []string
	}{
		{"retry", httpx.WithRetry(base, retry.New(retry.Settings{MaxAttempts: 2, Backoff: time.Nanosecond, Clock: clock.NewInstant(time.Time{})}), httpx.RetryOptions{}),
			"/", []string{"breakerimpl.retry error"}},
		{"timeout", httpx.WithTimeout(base, timeout.New(timeout.Settings{Timeout: 20 * time.Millisecond, Clock: clock.Real()})),
			"/slow", []string{"breakerimpl.timeout timeout"}},
		{"breaker and fallback", &httpx.BreakerTransport{Breaker: cb, Base: base, Fallback: func(*http.Request, error) (*http.Response, error) {
			return httptest.NewRecorder().Result(), nil
		}}, "/", []string{"breakerimpl.fallback error"}},
		{"open breaker and fallback", &httpx.BreakerTransport{Breaker: cb, Base: base, Fallback: func(*http.Request, error) (*http.Response, error) {
			return httptest.NewRecorder().Result(), nil
		}}, "/", []string{"breakerimpl.breaker open", "breakerimpl.fallback open"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tr := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)).Tracer("test")
			ctx, span := tr.Start(context.Background(), "client")
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+tc.path, nil)
			resp, err := (&http.Client{Transport: tc.rt}).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			span.End()
			if got := events(exp); !slices.Equal(got, tc.want) {
				t.Fatalf("events %q, want %q (err %v)", got, tc.want, err)
			}
		})
	}
	if !strings.Contains(srv.URL, "127.0.0.1") {
		t.Fatalf("server on %s, not loopback", srv.URL)
	}
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// serve starts h on a loopback test server and returns a client of its own.
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
