package degrade_test

import (
	"context"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
)

// A switch on the p99 latency of a dependency's calls, measured by a
// health score: over 100ms for 300ms it serves the fallback; it releases
// once the p99 is back under 50ms for 500ms, as the probes it lets through
// (one every 200ms while engaged) see, once the slow calls have left the
// score's one-second window.
func Example() {
	clk := clock.NewFake(time.Time{})
	latency := health.New(health.Settings{LatencyTarget: 25 * time.Millisecond, Window: time.Second, Clock: clk})
	sw := degrade.New(degrade.Settings{
		Name:      "search-p99",
		Signal:    func() float64 { return latency.Quantile(0.99).Seconds() },
		Threshold: 0.100, For: 300 * time.Millisecond,
		Release: 0.050, Hold: 500 * time.Millisecond,
		ProbeInterval: 200 * time.Millisecond,
		Clock:         clk,
		OnChange:      func(e degrade.Event) { fmt.Println(e.Reason, "engaged:", e.Engaged) },
	})
	search := breakerimpl.Pipeline[string, string]{
		Degrade:  sw,
		Fallback: fallback.Static[string, string]{Name: "cached-top-hits", Value: "top hits"},
	}
	slowness := 400 * time.Millisecond
	engine := func(context.Context) (string, error) {
		latency.Record(slowness, nil)
		return "fresh hits", nil
	}
	served := map[string]int{}
	for range 40 { // four seconds of slow answers, 10 a second
		res, _ := search.Execute(context.Background(), "q", engine)
		served[res.Source]++
		clk.Advance(100 * time.Millisecond)
	}
	fmt.Println("while slow:", served)
	slowness = 5 * time.Millisecond
	clear(served)
	for range 30 {
		res, _ := search.Execute(context.Background(), "q", engine)
		served[res.Source]++
		clk.Advance(100 * time.Millisecond)
	}
	fmt.Println("after:", served)
	// Output:
	// signal-over-threshold engaged: true
	// while slow: map[cached-top-hits:19 primary:21]
	// signal-under-release engaged: false
	// after: map[cached-top-hits:6 primary:24]
}
