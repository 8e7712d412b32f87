// Package prompolicy exports breakerimpl's policies other than the breaker
// (prombreaker) and the Redis limiters (promredislimit) to Prometheus:
// bulkheads, retries and their budgets, timeouts, load shedders, rate
// limiters, health scores and degrade switches, and the results of
// Pipelines by source and reason. Like prombreaker, it lives apart so that
// code using the policies does not import client_golang unless it wants
// these metrics.
//
//	c := prompolicy.New("shop")
//	c.AddBulkhead(recsBulkhead)
//	c.AddRetry(recsRetry)
//	results := prompolicy.NewResults("shop")
//	reg.MustRegister(c, results)
//	...
//	res, err := recs.Execute(ctx, id, fetch)
//	prompolicy.Observe(results, "recommendations", res, err)
//
// Every scrape reads each policy's Snapshot; the policies' call paths are
// untouched (Results counts on the call path, one counter increment a call).
// Metrics, labelled with the policy's name (namespace prefix omitted):
//
//	bulkhead_in_flight, bulkhead_waiting, bulkhead_max_concurrent      {bulkhead}
//	bulkhead_rejections_total{bulkhead,reason}                        full, wait_timeout
//	retry_retries_total, retry_gave_up_total, retry_max_attempts       {retry}
//	retry_budget_denied_total{retry}                                  retries the budget refused
//	retry_budget_window_calls, retry_budget_window_retries,
//	retry_budget_ratio                                                {retry}, with a budget only
//	timeout_seconds, timeout_timed_out_total                          {timeout}
//	http_fallback_calls_total, http_fallback_gzip_saved_bytes_total    {dependency}
//	timeout_abandoned_calls, timeout_abandoned_total,
//	timeout_abandon_refused_total                                     {timeout}, abandon mode
//	shedder_cpu_ratio, shedder_cpu_threshold_ratio, shedder_in_flight,
//	shedder_in_flight_limit, shedder_min_rt_seconds, shedder_dropping,
//	shedder_dropped_total                                             {shedder}
//	rate_limiter_limit, rate_limiter_available,
//	rate_limiter_rejections_total                                     {limiter,kind}
//	health_score, health_threshold, health_healthy,
//	health_latency_p95_seconds, health_error_ratio,
//	health_connection_error_ratio, health_window_requests,
//	health_refused_total, health_changes_total                        {dependency}
//	health_component_score{dependency,component}                      latency, errors, connection
//	degrade_switch_engaged, degrade_switch_signal,
//	degrade_switch_threshold, degrade_switch_release,
//	degrade_switch_engagements_total, degrade_switch_refused_total,
//	degrade_switch_probes_total                                       {switch}
//	degrade_switch_override{switch,override}                          automatic, engaged, released
//	pipeline_results_total{pipeline,source,reason}                    (Results)
//
// States and flags are gauges of 0 and 1, one series per state where there
// are several, as prombreaker's circuit_breaker_state{state}.
package prompolicy

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// Limiter is any limiter with a ratelimit.Snapshot: a *ratelimit.TokenBucket,
// *ratelimit.SlidingWindow or *ratelimit.Concurrency.
type Limiter interface {
	Snapshot() ratelimit.Snapshot
}

// Collector is a prometheus.Collector over a set of policies. Make one
// with New; add policies at any time. It is safe for concurrent use.
type Collector struct {
	mu        sync.Mutex
	bulkheads []*bulkhead.Bulkhead
	retries   []*retry.Retry
	timeouts  []*timeout.Timeout
	shedders  []*shed.Shedder
	limiters  []Limiter
	scores    []*health.Score
	switches  []*degrade.Switch
	fallbacks []HTTPFallback

	descs []*prometheus.Desc

	bhInFlight, bhWaiting, bhMax, bhRejections                                                          *prometheus.Desc
	rtRetries, rtGaveUp, rtMaxAttempts, rtDenied, rtWinCalls, rtWinRetries, rtRatio                     *prometheus.Desc
	toSeconds, toTimedOut, toAbandoned, toAbandonedTotal, toAbandonRefused                              *prometheus.Desc
	shCPU, shThreshold, shInFlight, shLimit, shMinRT, shDropping, shDropped                             *prometheus.Desc
	rlLimit, rlAvailable, rlRejections                                                                  *prometheus.Desc
	hScore, hThreshold, hHealthy, hP95, hErrors, hConnErrors, hRequests, hRefused, hChanges, hComponent *prometheus.Desc
	dEngaged, dSignal, dThreshold, dRelease, dEngagements, dRefused, dProbes, dOverride                 *prometheus.Desc
	hfCalls, hfGzipSaved                                                                                *prometheus.Desc
}

// HTTPFallback is what the collector reads of a transport that sends calls
// over HTTP while their gRPC path is down; *grpcx.HTTPFallback is one (the
// interface keeps grpc out of this package's imports).
type HTTPFallback interface {
	Name() string
	ServedOverHTTP() uint64
	GzipSavedBytes() uint64
}

// AddHTTPFallback adds HTTP fallback transports.
func (c *Collector) AddHTTPFallback(f ...HTTPFallback) {
	c.add(func() { c.fallbacks = append(c.fallbacks, f...) })
}

// New returns an empty collector whose metric names are prefixed by
// namespace (none if empty).
func New(namespace string) *Collector {
	c := &Collector{}
	d := func(subsystem, name, help string, labels ...string) *prometheus.Desc {
		desc := prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
		c.descs = append(c.descs, desc)
		return desc
	}
	c.bhInFlight = d("bulkhead", "in_flight", "Calls holding a bulkhead slot.", "bulkhead")
	c.bhWaiting = d("bulkhead", "waiting", "Callers queued for a bulkhead slot.", "bulkhead")
	c.bhMax = d("bulkhead", "max_concurrent", "Bulkhead slots.", "bulkhead")
	c.bhRejections = d("bulkhead", "rejections_total", "Calls a bulkhead turned away: at once (full) or after waiting (wait_timeout).", "bulkhead", "reason")

	c.rtRetries = d("retry", "retries_total", "Retries made.", "retry")
	c.rtGaveUp = d("retry", "gave_up_total", "Calls that ended with an error after a failed attempt.", "retry")
	c.rtMaxAttempts = d("retry", "max_attempts", "Most attempts of one call.", "retry")
	c.rtDenied = d("retry", "budget_denied_total", "Retries the retry budget refused.", "retry")
	c.rtWinCalls = d("retry", "budget_window_calls", "Calls begun in the retry budget's window.", "retry")
	c.rtWinRetries = d("retry", "budget_window_retries", "Retries begun in the retry budget's window.", "retry")
	c.rtRatio = d("retry", "budget_ratio", "Retries the budget allows per call.", "retry")

	c.hfCalls = d("http_fallback", "calls_total", "Calls sent over HTTP while their gRPC path was down.", "dependency")
	c.hfGzipSaved = d("http_fallback", "gzip_saved_bytes_total", "Bytes gzip kept off the wire on the HTTP path: uncompressed less compressed sizes of gzipped bodies, both ways.", "dependency")
	c.toSeconds = d("timeout", "seconds", "The timeout of a call.", "timeout")
	c.toTimedOut = d("timeout", "timed_out_total", "Calls that ran past their deadline.", "timeout")
	c.toAbandoned = d("timeout", "abandoned_calls", "Calls answered at their deadline whose work still runs (abandon mode).", "timeout")
	c.toAbandonedTotal = d("timeout", "abandoned_total", "Calls answered at their deadline and left to run (abandon mode).", "timeout")
	c.toAbandonRefused = d("timeout", "abandon_refused_total", "Calls refused because too many abandoned calls still ran (abandon mode).", "timeout")

	c.shCPU = d("shedder", "cpu_ratio", "CPU usage the shedder sees, as a share of the CPU the process may use.", "shedder")
	c.shThreshold = d("shedder", "cpu_threshold_ratio", "CPU usage over which the shedder may drop.", "shedder")
	c.shInFlight = d("shedder", "in_flight", "Requests in flight.", "shedder")
	c.shLimit = d("shedder", "in_flight_limit", "The in-flight limit at this CPU usage.", "shedder")
	c.shMinRT = d("shedder", "min_rt_seconds", "Lowest mean latency of a bucket of the window.", "shedder")
	c.shDropping = d("shedder", "dropping", "1 while the shedder drops requests.", "shedder")
	c.shDropped = d("shedder", "dropped_total", "Requests dropped.", "shedder")

	c.rlLimit = d("rate_limiter", "limit", "Tokens a second, calls a window, or concurrent calls allowed.", "limiter", "kind")
	c.rlAvailable = d("rate_limiter", "available", "Tokens in the bucket, calls the window still allows, or free slots.", "limiter", "kind")
	c.rlRejections = d("rate_limiter", "rejections_total", "Calls the limiter refused.", "limiter", "kind")

	c.hScore = d("health", "score", "Health score of the dependency, 0 to 1.", "dependency")
	c.hThreshold = d("health", "threshold", "Score at or under which the dependency is unhealthy.", "dependency")
	c.hHealthy = d("health", "healthy", "1 while the dependency is healthy.", "dependency")
	c.hP95 = d("health", "latency_p95_seconds", "95th-percentile latency of the window's calls.", "dependency")
	c.hErrors = d("health", "error_ratio", "Share of the window's calls that failed.", "dependency")
	c.hConnErrors = d("health", "connection_error_ratio", "Share of the window's calls that failed on the connection.", "dependency")
	c.hRequests = d("health", "window_requests", "Calls in the health score's window.", "dependency")
	c.hRefused = d("health", "refused_total", "Calls refused while unhealthy.", "dependency")
	c.hChanges = d("health", "changes_total", "Changes between healthy and unhealthy.", "dependency")
	c.hComponent = d("health", "component_score", "Score of one component, 0 to 1.", "dependency", "component")

	c.dEngaged = d("degrade_switch", "engaged", "1 while the switch forces the fallback.", "switch")
	c.dSignal = d("degrade_switch", "signal", "The signal's last reading.", "switch")
	c.dThreshold = d("degrade_switch", "threshold", "Signal over which the switch engages.", "switch")
	c.dRelease = d("degrade_switch", "release", "Signal at or under which the switch releases.", "switch")
	c.dEngagements = d("degrade_switch", "engagements_total", "Times the switch engaged.", "switch")
	c.dRefused = d("degrade_switch", "refused_total", "Calls the engaged switch sent to the fallback.", "switch")
	c.dProbes = d("degrade_switch", "probes_total", "Calls let through to the dependency while engaged.", "switch")
	c.dOverride = d("degrade_switch", "override", "Operator override: 1 for the one in force.", "switch", "override")
	return c
}

// AddBulkhead adds bulkheads.
func (c *Collector) AddBulkhead(b ...*bulkhead.Bulkhead) {
	c.add(func() { c.bulkheads = append(c.bulkheads, b...) })
}

// AddRetry adds retry policies (and their budgets).
func (c *Collector) AddRetry(r ...*retry.Retry) {
	c.add(func() { c.retries = append(c.retries, r...) })
}

// AddTimeout adds timeouts.
func (c *Collector) AddTimeout(t ...*timeout.Timeout) {
	c.add(func() { c.timeouts = append(c.timeouts, t...) })
}

// AddShedder adds load shedders.
func (c *Collector) AddShedder(s ...*shed.Shedder) {
	c.add(func() { c.shedders = append(c.shedders, s...) })
}

// AddLimiter adds rate limiters.
func (c *Collector) AddLimiter(l ...Limiter) { c.add(func() { c.limiters = append(c.limiters, l...) }) }

// AddHealth adds health scores.
func (c *Collector) AddHealth(h ...*health.Score) {
	c.add(func() { c.scores = append(c.scores, h...) })
}

// AddSwitch adds degrade switches.
func (c *Collector) AddSwitch(w ...*degrade.Switch) {
	c.add(func() { c.switches = append(c.switches, w...) })
}

func (c *Collector) add(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	bulkheads, retries, timeouts := append([]*bulkhead.Bulkhead(nil), c.bulkheads...), append([]*retry.Retry(nil), c.retries...), append([]*timeout.Timeout(nil), c.timeouts...)
	shedders, limiters := append([]*shed.Shedder(nil), c.shedders...), append([]Limiter(nil), c.limiters...)
	scores, switches := append([]*health.Score(nil), c.scores...), append([]*degrade.Switch(nil), c.switches...)
	fallbacks := append([]HTTPFallback(nil), c.fallbacks...)
	c.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, b := range bulkheads {
		s := b.Snapshot()
		gauge(c.bhInFlight, float64(s.InFlight), s.Name)
		gauge(c.bhWaiting, float64(s.Waiting), s.Name)
		gauge(c.bhMax, float64(s.MaxConcurrent), s.Name)
		counter(c.bhRejections, s.Rejected, s.Name, "full")
		counter(c.bhRejections, s.TimedOut, s.Name, "wait_timeout")
	}
	for _, r := range retries {
		s := r.Snapshot()
		counter(c.rtRetries, s.Retries, s.Name)
		counter(c.rtGaveUp, s.GaveUp, s.Name)
		gauge(c.rtMaxAttempts, float64(s.MaxAttempts), s.Name)
		counter(c.rtDenied, s.BudgetDenied, s.Name)
		if s.BudgetWindow.Ratio > 0 {
			gauge(c.rtWinCalls, float64(s.BudgetWindow.Calls), s.Name)
			gauge(c.rtWinRetries, float64(s.BudgetWindow.Retries), s.Name)
			gauge(c.rtRatio, s.BudgetWindow.Ratio, s.Name)
		}
	}
	for _, f := range fallbacks {
		counter(c.hfCalls, f.ServedOverHTTP(), f.Name())
		counter(c.hfGzipSaved, f.GzipSavedBytes(), f.Name())
	}
	for _, t := range timeouts {
		s := t.Snapshot()
		gauge(c.toSeconds, s.Timeout.Seconds(), s.Name)
		counter(c.toTimedOut, s.TimedOut, s.Name)
		if s.Mode == timeout.Abandon {
			gauge(c.toAbandoned, float64(s.Abandoned), s.Name)
			counter(c.toAbandonedTotal, s.AbandonedTotal, s.Name)
			counter(c.toAbandonRefused, s.AbandonRefused, s.Name)
		}
	}
	for _, sh := range shedders {
		s := sh.Snapshot()
		gauge(c.shCPU, s.CPU, s.Name)
		gauge(c.shThreshold, s.Threshold, s.Name)
		gauge(c.shInFlight, float64(s.InFlight), s.Name)
		gauge(c.shLimit, s.Limit, s.Name)
		gauge(c.shMinRT, s.MinRT.Seconds(), s.Name)
		gauge(c.shDropping, flag(s.Dropping), s.Name)
		counter(c.shDropped, s.Dropped, s.Name)
	}
	for _, l := range limiters {
		s := l.Snapshot()
		gauge(c.rlLimit, s.Limit, s.Name, s.Kind)
		gauge(c.rlAvailable, s.Available, s.Name, s.Kind)
		counter(c.rlRejections, s.Rejected, s.Name, s.Kind)
	}
	for _, h := range scores {
		h.Report() // afresh, as of this scrape
		s := h.Snapshot()
		gauge(c.hScore, s.Score, s.Name)
		gauge(c.hThreshold, s.Threshold, s.Name)
		gauge(c.hHealthy, flag(s.Healthy), s.Name)
		gauge(c.hP95, s.P95.Seconds(), s.Name)
		gauge(c.hErrors, s.ErrorRate, s.Name)
		gauge(c.hConnErrors, s.ConnectionErrorRate, s.Name)
		gauge(c.hRequests, float64(s.Requests), s.Name)
		counter(c.hRefused, s.Refused, s.Name)
		counter(c.hChanges, s.Changes, s.Name)
		gauge(c.hComponent, s.Latency, s.Name, "latency")
		gauge(c.hComponent, s.Errors, s.Name, "errors")
		gauge(c.hComponent, s.Connection, s.Name, "connection")
	}
	for _, w := range switches {
		s := w.Snapshot()
		gauge(c.dEngaged, flag(s.Engaged), s.Name)
		if !math.IsNaN(s.Signal) { // no reading yet: no sample
			gauge(c.dSignal, s.Signal, s.Name)
		}
		gauge(c.dThreshold, s.Threshold, s.Name)
		gauge(c.dRelease, s.Release, s.Name)
		counter(c.dEngagements, s.Engagements, s.Name)
		counter(c.dRefused, s.Refused, s.Name)
		counter(c.dProbes, s.Probes, s.Name)
		for _, o := range []string{degrade.OverrideAutomatic, degrade.OverrideEngaged, degrade.OverrideReleased} {
			gauge(c.dOverride, flag(s.Override == o), s.Name, o)
		}
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
