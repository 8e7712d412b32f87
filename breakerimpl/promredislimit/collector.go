// Package promredislimit exports the Redis-backed rate limiters of
// breakerimpl/ratelimit/redislimit to Prometheus. Like prombreaker, it
// lives apart so that code using the limiters does not import
// client_golang unless it wants these metrics.
//
//	reg.MustRegister(promredislimit.NewCollector("shop", searchLimiter, loginLimiter))
//
// Every scrape reads each limiter's Snapshot; the limiters' call paths are
// untouched. Metrics, each labelled with the limiter's name (namespace
// prefix omitted here):
//
//	redis_limiter_backend{backend}                1 for where the counts are now (redis, memory), 0 for the other
//	redis_limiter_decisions_total{decision,backend} allowed and rejected calls, by where they were decided
//	redis_limiter_redis_errors_total              Redis calls and health checks that failed or timed out
//	redis_limiter_fallbacks_total                 moves to memory
//	redis_limiter_recoveries_total                returns to Redis
//	redis_limiter_memory_keys                     keys the in-memory fallback tracks
//	redis_limiter_limit{kind}                     the configured limit (tokens a second, or calls a window)
package promredislimit

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
)

// Limiter is either redislimit limiter.
type Limiter interface {
	Snapshot() redislimit.Snapshot
}

// Collector is a prometheus.Collector over a set of limiters. It is safe
// for concurrent use.
type Collector struct {
	mu       sync.Mutex
	limiters []Limiter

	backend, decisions, errors, fallbacks, recoveries, keys, limit *prometheus.Desc
}

// NewCollector returns a collector for limiters, with metric names prefixed
// by namespace (none if empty). Limiters should have distinct names, which
// label their metrics.
func NewCollector(namespace string, limiters ...Limiter) *Collector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "redis_limiter", n) }
	l := []string{"limiter"}
	return &Collector{
		limiters:   append([]Limiter(nil), limiters...),
		backend:    prometheus.NewDesc(name("backend"), "Where the limiter keeps its counts: 1 for the current backend.", append(l, "backend"), nil),
		decisions:  prometheus.NewDesc(name("decisions_total"), "Calls allowed and rejected, by the backend that decided.", append(l, "decision", "backend"), nil),
		errors:     prometheus.NewDesc(name("redis_errors_total"), "Redis calls and health checks that failed or timed out.", l, nil),
		fallbacks:  prometheus.NewDesc(name("fallbacks_total"), "Moves from Redis to the in-memory fallback.", l, nil),
		recoveries: prometheus.NewDesc(name("recoveries_total"), "Returns from the in-memory fallback to Redis.", l, nil),
		keys:       prometheus.NewDesc(name("memory_keys"), "Keys the in-memory fallback tracks.", l, nil),
		limit:      prometheus.NewDesc(name("limit"), "The configured limit: tokens a second, or calls a window.", append(l, "kind"), nil),
	}
}

// Add adds a limiter to the collector.
func (c *Collector) Add(l Limiter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limiters = append(c.limiters, l)
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.backend, c.decisions, c.errors, c.fallbacks, c.recoveries, c.keys, c.limit} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	limiters := append([]Limiter(nil), c.limiters...)
	c.mu.Unlock()
	for _, l := range limiters {
		s := l.Snapshot()
		n := s.Name
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{n}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{n}, labels...)...)
		}
		for _, b := range []redislimit.Backend{redislimit.InRedis, redislimit.InMemory} {
			v := 0.0
			if s.Backend == b {
				v = 1
			}
			gauge(c.backend, v, b.String())
		}
		counter(c.decisions, s.Allowed-s.AllowedInMemory, "allowed", "redis")
		counter(c.decisions, s.AllowedInMemory, "allowed", "memory")
		counter(c.decisions, s.Rejected-s.RejectedInMemory, "rejected", "redis")
		counter(c.decisions, s.RejectedInMemory, "rejected", "memory")
		counter(c.errors, s.RedisErrors)
		counter(c.fallbacks, s.Fallbacks)
		counter(c.recoveries, s.Recoveries)
		gauge(c.keys, float64(s.MemoryKeys))
		gauge(c.limit, s.Limit, s.Kind)
	}
}
