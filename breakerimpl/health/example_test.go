package health_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
)

// A score watches a dependency's calls and, as a Pipeline's Degrade guard,
// sends them to the fallback while it is unhealthy.
func Example() {
	clk := clock.NewFake(time.Time{})
	score := health.New(health.Settings{
		Name:          "recommendations",
		LatencyTarget: 50 * time.Millisecond,
		Clock:         clk,
		OnChange: func(e health.Event) {
			fmt.Printf("%s: healthy=%v (%s, score %.2f)\n", e.Name, e.Healthy, e.Reason, e.Report.Score)
		},
	})
	recs := breakerimpl.Pipeline[struct{}, string]{
		Degrade:  score,
		Fallback: fallback.Static[struct{}, string]{Name: "default", Value: "bestsellers"},
	}
	failing := func(context.Context) (string, error) { return "", errors.New("502 bad gateway") }
	for range 10 {
		recs.Execute(context.Background(), struct{}{}, failing)
	}
	clk.Advance(time.Second)
	res, _ := recs.Execute(context.Background(), struct{}{}, failing)
	fmt.Println(res.Source, res.Reason, score.Healthy())
	// Output:
	// recommendations: healthy=false (score-under-threshold, score 0.60)
	// default degraded false
}
