package runner

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/prombreaker"
	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

// The metrics sampler reads a real /metrics over loopback with
// prometheus/common's parser, and the contract forms judge what it
// recorded: a counter's increase, a breaker's state, a histogram's
// quantile.
func TestMetricsSamplerOnARealEndpoint(t *testing.T) {
	reg := prometheus.NewRegistry()
	queries := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shop_db_queries_total", Help: "Queries."}, []string{"kind"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "shop_request_duration_seconds", Help: "Latency.", Buckets: []float64{0.01, 0.1, 1}}, []string{"route"})
	summary := prometheus.NewSummary(prometheus.SummaryOpts{Name: "shop_batch_seconds", Help: "Batches.", Objectives: map[float64]float64{0.5: 0.05}})
	nan := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shop_ratio", Help: "Not a number yet."})
	nan.Set(math.NaN())
	cb := circuitbreaker.New(circuitbreaker.Settings{Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}})
	reg.MustRegister(queries, latency, summary, nan, prombreaker.NewCollector("shop", cb))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	s := &sampler{url: srv.URL + "/metrics", client: srv.Client(), accept: "text/plain; version=0.0.4",
		decode: metricsDecoder([]string{"shop_db_queries_total", "shop_request_duration_seconds_bucket", "*circuit_breaker_state", "shop_ratio", "shop_batch_seconds"})}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "s", Start: t0}}
	tl.Events = append(tl.Events, timeline.Event{Time: t0, Kind: timeline.PhaseStart, Phase: "p"})
	sample := func(at time.Duration) map[string]any {
		doc, err := s.sample(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(at), Kind: timeline.Metrics, Phase: "p", Data: doc})
		return doc
	}
	queries.WithLabelValues("product").Add(10)
	first := sample(0)
	fams := first["metrics"].(map[string]any)
	for _, unwanted := range []string{"go_goroutines", "shop_batch_seconds_sum", "circuit_breaker_calls_total"} {
		if _, ok := fams[unwanted]; ok {
			t.Errorf("recorded %s, which no name asks for", unwanted)
		}
	}
	if got := len(fams["shop_circuit_breaker_state"].([]any)); got != 3 {
		t.Errorf("%d breaker state series, want 3 (closed, open, half_open)", got)
	}
	if v := fams["shop_ratio"].([]any)[0].(map[string]any)["value"]; v != "NaN" {
		t.Errorf("NaN recorded as %v, want the string NaN", v)
	}

	for range 7 {
		queries.WithLabelValues("product").Inc()
		latency.WithLabelValues("product").Observe(0.05)
	}
	latency.WithLabelValues("product").Observe(0.5)
	queries.WithLabelValues("order_write").Inc() // a series born in the window
	cb.ForceOpen("test")
	sample(time.Second)
	for range 50 {
		tl.Requests = append(tl.Requests, timeline.Request{Phase: "p", Time: t0.Add(10 * time.Millisecond), Status: 200, Target: "GET /x"})
	}
	tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(time.Second), Kind: timeline.PhaseEnd, Phase: "p"})

	for _, tt := range []struct {
		expect, measured string
	}{
		{`increase(shop_db_queries_total{kind="product"}) == 7`, "7 over 1s (2 samples, 50 requests)"},
		{`increase(shop_db_queries_total) == 8`, ""},
		{`max(shop_circuit_breaker_state{breaker="db",state="open"}) == 1`, "1 at +1s (1 samples)"},
		{`histogram_quantile(0.5, shop_request_duration_seconds{route="product"}) < 100ms`, "61.4ms (of 8 observations)"},
		{`histogram_quantile(0.99, shop_request_duration_seconds{route="product"}) > 500ms`, ""},
	} {
		c, err := contract.Compile(contract.Spec{Name: "c", Phase: "p", Expect: []string{tt.expect}})
		if err != nil {
			t.Fatal(err)
		}
		got := c.Evaluate(tl).Checks[0]
		if got.Outcome != contract.Pass || (tt.measured != "" && got.Measured != tt.measured) {
			t.Errorf("%s: %s %q (%s)", tt.expect, got.Outcome, got.Measured, got.Reason)
		}
	}
}

func TestMetricsSamplerRefusesWhatIsNotTheTextFormat(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"breakers": {}}`))
	}))
	defer srv.Close()
	s := &sampler{url: srv.URL, client: srv.Client(), decode: metricsDecoder(nil)}
	_, err := s.sample(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not the Prometheus text format") {
		t.Fatalf("JSON on /metrics: %v", err)
	}
	if errors.Unwrap(err) != nil && strings.Contains(err.Error(), "panic") {
		t.Fatal(err)
	}
}
