package demo

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chaoskit/chaoskit/breakerimpl/prombreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/prompolicy"
)

// MetricsNamespace prefixes every metric the demo exports on /metrics.
const MetricsNamespace = "chaoskit_demo"

// metrics are the demo's Prometheus metrics, on a registry of its own:
// breakerimpl's collectors for every policy the demo runs (the breakers'
// chaoskit_demo_circuit_breaker_state{breaker,state}, the bulkhead,
// timeout, retry and budget, shedder, limiter, health score and degrade
// switch), the pipelines' results by source and reason, and the demo's
// own requests, latencies and dependency calls.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	results  *prompolicy.Results
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), results: prompolicy.NewResults(MetricsNamespace)}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: MetricsNamespace,
		Name:      "requests_total",
		Help:      "Requests served, by route, status code and source (db, cache, default, none).",
	}, []string{"route", "code", "source"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: MetricsNamespace,
		Name:      "request_duration_seconds",
		Help:      "Request latency by route.",
		Buckets:   []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route"})
	policies := prompolicy.New(MetricsNamespace)
	policies.AddBulkhead(s.rec.bulkhead)
	policies.AddTimeout(s.rec.timeout)
	policies.AddRetry(s.rec.retry)
	policies.AddShedder(s.searching.shedder)
	policies.AddLimiter(s.searching.limiter)
	policies.AddHealth(s.dbHealth)
	policies.AddSwitch(s.dbDegrade)
	if s.rec.overHTTP != nil {
		policies.AddHTTPFallback(s.rec.overHTTP)
	}
	if s.rec.grpcHealth != nil {
		policies.AddHealth(s.rec.grpcHealth)
	}
	// The calls that reached a dependency: what a breaker or a retry budget
	// spares it, which no response shows.
	dbQueries := prometheus.NewDesc(prometheus.BuildFQName(MetricsNamespace, "db", "queries_total"), "Queries that reached the database (faulted ones included), by kind.", []string{"kind"}, nil)
	upstream := prometheus.NewDesc(prometheus.BuildFQName(MetricsNamespace, "recommendations", "upstream_calls_total"), "Calls that reached the recommendations dependency.", nil, nil)
	cacheEntries := prometheus.NewDesc(prometheus.BuildFQName(MetricsNamespace, "cache", "entries"), "Products in the last-known-good cache.", nil, nil)
	m.reg.MustRegister(m.requests, m.latency, m.results, policies, collectors.NewGoCollector(),
		prombreaker.NewCollector(MetricsNamespace, s.dbBreaker, s.ordersBreaker, s.rec.breaker),
		collectorFunc{descs: []*prometheus.Desc{dbQueries, upstream, cacheEntries}, collect: func(ch chan<- prometheus.Metric) {
			calls := s.store.Calls()
			ch <- prometheus.MustNewConstMetric(dbQueries, prometheus.CounterValue, float64(calls.ProductQueries), "product")
			ch <- prometheus.MustNewConstMetric(dbQueries, prometheus.CounterValue, float64(calls.OrderWrites), "order_write")
			ch <- prometheus.MustNewConstMetric(upstream, prometheus.CounterValue, float64(s.rec.upstreamCalls()))
			ch <- prometheus.MustNewConstMetric(cacheEntries, prometheus.GaugeValue, float64(s.cache.Stats().Entries))
		}})
	return m
}

// collectorFunc adapts a function to prometheus.Collector.
type collectorFunc struct {
	descs   []*prometheus.Desc
	collect func(chan<- prometheus.Metric)
}

func (c collectorFunc) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collectorFunc) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// instrument counts and times the requests of one route.
func (m *metrics) instrument(route string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		h(rec, r)
		m.latency.WithLabelValues(route).Observe(time.Since(start).Seconds())
		source := rec.Header().Get(HeaderSource)
		if source == "" {
			source = "none"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code), source).Inc()
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
