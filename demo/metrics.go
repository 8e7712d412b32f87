package demo

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the demo's Prometheus metrics, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chaoskit_demo_requests_total",
		Help: "Requests served, by route, status code and source (db, cache, default, none).",
	}, []string{"route", "code", "source"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "chaoskit_demo_request_duration_seconds",
		Help:    "Request latency by route.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route"})
	breakers := prometheus.NewDesc("chaoskit_demo_breaker_open", "1 when the named breaker is open, 0.5 half-open, 0 closed.", []string{"breaker"}, nil)
	cacheEntries := prometheus.NewDesc("chaoskit_demo_cache_entries", "Products in the last-known-good cache.", nil, nil)
	m.reg.MustRegister(m.requests, m.latency, collectors.NewGoCollector(),
		collectorFunc{descs: []*prometheus.Desc{breakers, cacheEntries}, collect: func(ch chan<- prometheus.Metric) {
			for name, b := range s.State().Breakers {
				v := 0.0
				switch b.State {
				case "open":
					v = 1
				case "half-open":
					v = 0.5
				}
				ch <- prometheus.MustNewConstMetric(breakers, prometheus.GaugeValue, v, name)
			}
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
