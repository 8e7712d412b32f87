package demo

import (
	"context"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
	"github.com/chaoskit/chaoskit/breakerimpl/writebehind"
	"net/http"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/demo/cache"
	"github.com/chaoskit/chaoskit/demo/store"
)

// StatePath is where the demo serves its State; chaoskit samples it during a
// run to judge breaker contracts.
const StatePath = "/debug/chaoskit/state"

// AdminPath is where the admin endpoint is mounted, with --admin-token.
const AdminPath = "/debug/chaoskit/admin"

// State is the demo's resilience state: every breaker, bulkhead, limiter,
// shedder and the cache. Breakers are keyed by name; each has at least a
// "state" of closed, open or half-open.
type State struct {
	Breakers  map[string]BreakerState       `json:"breakers"`
	Bulkheads map[string]bulkhead.Snapshot  `json:"bulkheads"`
	Timeouts  map[string]timeout.Snapshot   `json:"timeouts"`
	Retries   map[string]RetryState         `json:"retries"`
	Limiters  map[string]ratelimit.Snapshot `json:"limiters"`
	Shedders  map[string]shed.Snapshot      `json:"shedders"`
	// Recommendations counts the calls that reached the dependency.
	Recommendations RecommendationsState `json:"recommendations"`
	Cache           cache.Stats          `json:"cache"`
	// DB counts the calls that reached the database.
	DB     store.Calls `json:"db"`
	Orders OrdersState `json:"orders"`
	// WriteBehind is the orders' write-behind queue, with --write-behind.
	WriteBehind *writebehind.Snapshot `json:"write_behind,omitempty"`
}

// RetryState is a retry policy and its budget.
type RetryState struct {
	Retry  retry.Snapshot        `json:"retry"`
	Budget *retry.BudgetSnapshot `json:"budget,omitempty"`
}

// RecommendationsState counts what reached the recommendations dependency.
type RecommendationsState struct {
	UpstreamCalls int64 `json:"upstream_calls"`
	// OverHTTP counts the calls the HTTP fallback transport sent over
	// HTTP.
	OverHTTP uint64 `json:"over_http"`
	// GRPCHealth is the gRPC path's health score, when it has one.
	GRPCHealth *health.Report `json:"grpc_health,omitempty"`
}

// BreakerState is one breaker's state and counts.
type BreakerState struct {
	State  string                `json:"state"`
	Counts circuitbreaker.Counts `json:"counts"`
}

// OrdersState counts the write path.
type OrdersState struct {
	// Committed is the number of orders in the database (-1 when it
	// cannot be read).
	Committed int `json:"committed"`
	// Pending is acknowledged orders not yet committed (AckBeforeCommit only).
	Pending int64 `json:"pending"`
}

func breakerState(b *circuitbreaker.Breaker) BreakerState {
	return BreakerState{State: b.State().String(), Counts: b.Counts()}
}

// State returns the service's resilience state.
func (s *Server) State() State {
	ctx, cancel := context.WithTimeout(context.Background(), orderTimeout)
	defer cancel()
	committed, err := s.store.CountOrders(ctx)
	if err != nil {
		committed = -1
	}
	st := State{
		Orders: OrdersState{Committed: committed, Pending: s.pendingCount.Load()},
		Breakers: map[string]BreakerState{
			"db":              breakerState(s.dbBreaker),
			"orders-db":       breakerState(s.ordersBreaker),
			"recommendations": breakerState(s.rec.breaker),
		},
		Bulkheads:       map[string]bulkhead.Snapshot{"recommendations": s.rec.bulkhead.Snapshot()},
		Timeouts:        map[string]timeout.Snapshot{"recommendations": s.rec.timeout.Snapshot()},
		Retries:         map[string]RetryState{"recommendations": s.rec.retryState()},
		Limiters:        map[string]ratelimit.Snapshot{"search": s.searching.limiter.Snapshot()},
		Shedders:        map[string]shed.Snapshot{"search": s.searching.shedder.Snapshot()},
		Recommendations: RecommendationsState{UpstreamCalls: s.rec.upstreamCalls()},
		Cache:           s.cache.Stats(),
		DB:              s.store.Calls(),
	}
	if f := s.rec.overHTTP; f != nil {
		st.Breakers["recommendations-grpc"] = breakerState(f.Breaker())
		st.Recommendations.OverHTTP = f.ServedOverHTTP()
	}
	if s.orders != nil {
		q := s.orders.q.Snapshot()
		st.WriteBehind = &q
	}
	if h := s.rec.grpcHealth; h != nil {
		r := h.Report()
		st.Recommendations.GRPCHealth = &r
	}
	return st
}

func (s *Server) state(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.State()) }
