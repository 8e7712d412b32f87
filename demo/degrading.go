package demo

import (
	"errors"
	"math"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/reload"
	"github.com/chaoskit/chaoskit/demo/store"
)

// The product reads' degrade switch: when the database answers, but slowly
// (the p95 of its reads over 100ms for 300ms), reads are served from the
// cache, which a breaker counting errors would never do. It releases once
// the p95 of the probes it lets through (one every 200ms) is back under
// 50ms for 300ms, that is once the slow reads have left the half-second
// window. The p95, not the p99: over a window of about 50 reads the p99 is
// the slowest one, and one read slowed by a busy machine would engage the
// switch for the whole window.
const (
	degradeQuantile  = 0.95
	degradeThreshold = 100 * time.Millisecond
	degradeFor       = 300 * time.Millisecond
	degradeRelease   = 50 * time.Millisecond
	degradeHold      = 300 * time.Millisecond
	degradeProbe     = 200 * time.Millisecond
	degradeWindow    = 500 * time.Millisecond
)

// newDBHealth scores the product database from the reads that reach it; a
// missing product is an answer, not a failure.
func newDBHealth() *health.Score {
	return health.New(health.Settings{
		Name:          "db",
		LatencyTarget: 25 * time.Millisecond, // bins from 0.8ms to 800ms
		Window:        degradeWindow,
		Buckets:       10,
		Classify: func(err error) breakerimpl.Outcome {
			if errors.Is(err, store.ErrNotFound) {
				return breakerimpl.Success
			}
			return breakerimpl.DefaultClassifier(err)
		},
	})
}

// newDBDegrade is the switch on the database's p95 read latency.
// latched is the DegradeLatched variant, broken on purpose: the switch
// never releases.
func newDBDegrade(h *health.Score, latched bool) *degrade.Switch {
	release := degradeRelease.Seconds()
	if latched {
		release = math.Inf(-1)
	}
	return degrade.New(degrade.Settings{
		Name:          "db-p95",
		Signal:        func() float64 { return h.Quantile(degradeQuantile).Seconds() },
		Threshold:     degradeThreshold.Seconds(),
		For:           degradeFor,
		Release:       release,
		Hold:          degradeHold,
		Interval:      50 * time.Millisecond,
		ProbeInterval: degradeProbe,
	})
}

// watchPolicies applies the policy file at path to the demo's policies
// (policyTargets), now and whenever it changes; a bad edit is logged and
// the settings in force stay.
func (s *Server) watchPolicies(path string) (*reload.Watcher, error) {
	return reload.Watch(path, s.policyTargets(), reload.WatchSettings{Log: s.log})
}

// policyTargets are the policies a policy file tunes and the admin
// endpoint lists, made once.
func (s *Server) policyTargets() *reload.Targets {
	s.targetsOnce.Do(func() {
		t := &reload.Targets{}
		t.AddBreaker(s.dbBreaker, s.ordersBreaker, s.rec.breaker)
		t.AddRetry("recommendations", s.rec.retry)
		if tb, ok := s.searching.limiter.(*ratelimit.TokenBucket); ok {
			t.AddLimiter("search", tb)
		}
		t.AddTimeout("recommendations", s.rec.timeout)
		t.AddBulkhead("recommendations", s.rec.bulkhead)
		t.AddFallback("product-cache", &s.cacheOn)
		t.AddFallback("recommendations-default", &s.rec.defaultOn)
		t.AddHealth("db", s.dbHealth)
		if s.rec.grpcHealth != nil {
			t.AddHealth("recommendations-grpc", s.rec.grpcHealth)
		}
		t.AddDegrade("db-p95", s.dbDegrade)
		s.targets = t
	})
	return s.targets
}
