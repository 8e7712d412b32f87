package prombreaker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/prombreaker"
)

var errDown = errors.New("down")

func TestCollector(t *testing.T) {
	clk := clock.NewFake(time.Time{})
	db := circuitbreaker.New(circuitbreaker.Settings{
		Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: 10 * time.Second, Clock: clk,
	})
	search := circuitbreaker.New(circuitbreaker.Settings{Name: "search", Clock: clk})
	ctx := context.Background()
	for _, err := range []error{nil, context.Canceled, errDown, errDown, nil} {
		circuitbreaker.Execute(ctx, db, func(context.Context) (int, error) { return 0, err })
	}
	clk.Advance(2500 * time.Millisecond)
	search.ForceOpen("reindex")

	reg := prometheus.NewPedanticRegistry()
	c := prombreaker.NewCollector("shop")
	c.Add(db)
	c.Add(search)
	reg.MustRegister(c)

	want := `
# HELP shop_circuit_breaker_state Circuit breaker state: 1 for the current one.
# TYPE shop_circuit_breaker_state gauge
shop_circuit_breaker_state{breaker="db",state="closed"} 0
shop_circuit_breaker_state{breaker="db",state="half_open"} 0
shop_circuit_breaker_state{breaker="db",state="open"} 1
shop_circuit_breaker_state{breaker="search",state="closed"} 0
shop_circuit_breaker_state{breaker="search",state="half_open"} 0
shop_circuit_breaker_state{breaker="search",state="open"} 1
# HELP shop_circuit_breaker_override Operator override: 1 for the one in force (automatic when none).
# TYPE shop_circuit_breaker_override gauge
shop_circuit_breaker_override{breaker="db",override="automatic"} 1
shop_circuit_breaker_override{breaker="db",override="forced_closed"} 0
shop_circuit_breaker_override{breaker="db",override="forced_open"} 0
shop_circuit_breaker_override{breaker="search",override="automatic"} 0
shop_circuit_breaker_override{breaker="search",override="forced_closed"} 0
shop_circuit_breaker_override{breaker="search",override="forced_open"} 1
# HELP shop_circuit_breaker_calls_total Outcomes of admitted calls (failures include panics and slow calls).
# TYPE shop_circuit_breaker_calls_total counter
shop_circuit_breaker_calls_total{breaker="db",outcome="failure"} 2
shop_circuit_breaker_calls_total{breaker="db",outcome="ignored"} 1
shop_circuit_breaker_calls_total{breaker="db",outcome="success"} 1
shop_circuit_breaker_calls_total{breaker="search",outcome="failure"} 0
shop_circuit_breaker_calls_total{breaker="search",outcome="ignored"} 0
shop_circuit_breaker_calls_total{breaker="search",outcome="success"} 0
# HELP shop_circuit_breaker_rejections_total Calls turned away: open, half-open with every probe taken, or throttled.
# TYPE shop_circuit_breaker_rejections_total counter
shop_circuit_breaker_rejections_total{breaker="db"} 1
shop_circuit_breaker_rejections_total{breaker="search"} 0
# HELP shop_circuit_breaker_requests_total Calls that finished or were rejected.
# TYPE shop_circuit_breaker_requests_total counter
shop_circuit_breaker_requests_total{breaker="db"} 5
shop_circuit_breaker_requests_total{breaker="search"} 0
# HELP shop_circuit_breaker_retry_after_seconds Rest of the open duration; 0 when not open or not known.
# TYPE shop_circuit_breaker_retry_after_seconds gauge
shop_circuit_breaker_retry_after_seconds{breaker="db"} 7.5
shop_circuit_breaker_retry_after_seconds{breaker="search"} 0
# HELP shop_circuit_breaker_state_changes_total Changes of state or override.
# TYPE shop_circuit_breaker_state_changes_total counter
shop_circuit_breaker_state_changes_total{breaker="db"} 1
shop_circuit_breaker_state_changes_total{breaker="search"} 1
`
	names := []string{"shop_circuit_breaker_state", "shop_circuit_breaker_override", "shop_circuit_breaker_calls_total",
		"shop_circuit_breaker_rejections_total", "shop_circuit_breaker_requests_total", "shop_circuit_breaker_retry_after_seconds",
		"shop_circuit_breaker_state_changes_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 2*(3+3+1+3+1+1+1+1+1+3) {
		t.Fatalf("%d series, %v", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
