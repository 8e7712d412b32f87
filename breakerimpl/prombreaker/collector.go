// Package prombreaker exports circuit breakers to Prometheus. It lives
// apart from the circuitbreaker package so that code using breakers does
// not import client_golang unless it wants these metrics.
//
//	reg.MustRegister(prombreaker.NewCollector("shop", productsBreaker, ordersBreaker))
//
// Every scrape reads each breaker's Snapshot; nothing is counted twice and
// the breakers' hot paths are untouched. Metrics, each labelled with the
// breaker's name (namespace prefix omitted here):
//
//	circuit_breaker_state{state}            1 for the current state (closed, open, half_open), 0 for the others
//	circuit_breaker_override{override}      1 for the override in force (automatic, forced_open, forced_closed), 0 for the others
//	circuit_breaker_requests_total          calls finished or rejected
//	circuit_breaker_calls_total{outcome}    success, failure or ignored
//	circuit_breaker_slow_calls_total        successes counted as failures for being slow
//	circuit_breaker_rejections_total        calls turned away (open, half-open full, throttled)
//	circuit_breaker_state_changes_total     changes of state or override
//	circuit_breaker_probes_running          half-open probes in flight
//	circuit_breaker_retry_after_seconds     rest of the open duration, 0 when not known
//	circuit_breaker_window_calls{outcome}   the current window's success, failure and rejected counts
package prombreaker

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
)

// Collector is a prometheus.Collector over a set of breakers. It is safe
// for concurrent use.
type Collector struct {
	mu       sync.Mutex
	breakers []*circuitbreaker.Breaker

	state, override, requests, calls, slow, rejections, changes, probes, retryAfter, window *prometheus.Desc
}

// NewCollector returns a collector for breakers, with metric names prefixed
// by namespace (none if empty). Breakers should have distinct names, which
// label their metrics.
func NewCollector(namespace string, breakers ...*circuitbreaker.Breaker) *Collector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "circuit_breaker", n) }
	b := []string{"breaker"}
	return &Collector{
		breakers:   append([]*circuitbreaker.Breaker(nil), breakers...),
		state:      prometheus.NewDesc(name("state"), "Circuit breaker state: 1 for the current one.", append(b, "state"), nil),
		override:   prometheus.NewDesc(name("override"), "Operator override: 1 for the one in force (automatic when none).", append(b, "override"), nil),
		requests:   prometheus.NewDesc(name("requests_total"), "Calls that finished or were rejected.", b, nil),
		calls:      prometheus.NewDesc(name("calls_total"), "Outcomes of admitted calls (failures include panics and slow calls).", append(b, "outcome"), nil),
		slow:       prometheus.NewDesc(name("slow_calls_total"), "Calls that returned no error but were slower than the slow-call threshold.", b, nil),
		rejections: prometheus.NewDesc(name("rejections_total"), "Calls turned away: open, half-open with every probe taken, or throttled.", b, nil),
		changes:    prometheus.NewDesc(name("state_changes_total"), "Changes of state or override.", b, nil),
		probes:     prometheus.NewDesc(name("probes_running"), "Half-open probe calls in flight.", b, nil),
		retryAfter: prometheus.NewDesc(name("retry_after_seconds"), "Rest of the open duration; 0 when not open or not known.", b, nil),
		window:     prometheus.NewDesc(name("window_calls"), "Counts of the current state's window, as the trip rule sees them.", append(b, "outcome"), nil),
	}
}

// Add adds a breaker to the collector.
func (c *Collector) Add(b *circuitbreaker.Breaker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.breakers = append(c.breakers, b)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.override, c.requests, c.calls, c.slow, c.rejections, c.changes, c.probes, c.retryAfter, c.window} {
		ch <- d
	}
}

var (
	states    = []circuitbreaker.State{circuitbreaker.Closed, circuitbreaker.Open, circuitbreaker.HalfOpen}
	overrides = []circuitbreaker.Override{circuitbreaker.Automatic, circuitbreaker.ForcedOpen, circuitbreaker.ForcedClosed}
)

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	breakers := append([]*circuitbreaker.Breaker(nil), c.breakers...)
	c.mu.Unlock()
	for _, b := range breakers {
		s := b.Snapshot()
		n := s.Name
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{n}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{n}, labels...)...)
		}
		for _, st := range states {
			gauge(c.state, boolValue(s.State == st), label(st.String()))
		}
		for _, ov := range overrides {
			gauge(c.override, boolValue(s.Override == ov), label(ov.String()))
		}
		counter(c.requests, s.Requests)
		counter(c.calls, s.Successes, "success")
		counter(c.calls, s.Failures, "failure")
		counter(c.calls, s.Ignored, "ignored")
		counter(c.slow, s.SlowCalls)
		counter(c.rejections, s.Rejections)
		counter(c.changes, s.StateChanges)
		gauge(c.probes, float64(s.ProbesRunning))
		gauge(c.retryAfter, s.RetryAfter.Seconds())
		gauge(c.window, float64(s.Window.Successes), "success")
		gauge(c.window, float64(s.Window.Failures), "failure")
		gauge(c.window, float64(s.Window.Rejected), "rejected")
	}
}

// label turns a state's name into a label value in Prometheus's snake case:
// half-open is half_open.
func label(name string) string { return strings.ReplaceAll(name, "-", "_") }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
