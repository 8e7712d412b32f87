package runner

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/testserver"
)

// A probe read from a real Prometheus server (Debian's, started on
// loopback) scraping a fixture's /metrics: one sample reads as its number,
// an aggregate over the fixture's two series too; no sample, several
// series, a query the server refuses and a server that is gone are each
// an unknown reading (an error), never a number.
func TestQueryPrometheusServer(t *testing.T) {
	var value atomic.Int64
	value.Store(42)
	fixture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "# TYPE fixture_value gauge\nfixture_value{shard=\"a\"} %d\nfixture_value{shard=\"b\"} 8\n", value.Load())
	}))
	defer fixture.Close()
	prom := testserver.StartPrometheus(t, strings.TrimPrefix(fixture.URL, "http://"))
	ctx := t.Context()

	// Wait for the first scrape: the series exist once it is done.
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := queryPrometheus(ctx, nil, prom.URL(), `fixture_value{shard="a"}`, time.Now())
		if err == nil {
			if v != 42 {
				t.Fatalf("fixture_value{shard=\"a\"} = %v, want 42", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample scraped within 30s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if v, err := queryPrometheus(ctx, nil, prom.URL(), `sum(fixture_value)`, time.Now()); err != nil || v != 50 {
		t.Errorf("sum(fixture_value) = %v, %v; want 50", v, err)
	}
	if v, err := queryPrometheus(ctx, nil, prom.URL(), `scalar(sum(fixture_value)) * 2`, time.Now()); err != nil || v != 100 {
		t.Errorf("a scalar = %v, %v; want 100", v, err)
	}
	for _, tt := range []struct{ query, want string }{
		{`fixture_value`, "gave 2 series, want one"},
		{`fixture_value{shard="none"}`, "gave 0 series"},
		{`sum(`, "bad_data"},
		{`sqrt(vector(-1))`, "not a number"},
	} {
		if v, err := queryPrometheus(ctx, nil, prom.URL(), tt.query, time.Now()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s = %v, %v; want an error saying %q", tt.query, v, err, tt.want)
		}
	}
	addr := prom.Addr()
	prom.Stop()
	if v, err := queryPrometheus(ctx, nil, "http://"+addr, `sum(fixture_value)`, time.Now()); err == nil {
		t.Errorf("a server that is gone gave %v", v)
	}
}

// Only loopback: a Prometheus server elsewhere is never dialled.
func TestQueryPrometheusDialsLoopbackOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := queryPrometheus(ctx, nil, "http://"+net.JoinHostPort("192.0.2.1", "9090"), "up", time.Now())
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("a non-loopback server: %v, want a loopback refusal", err)
	}
}
