package prompolicy_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/prompolicy"
)

// A bulkhead and the results of the pipeline it guards, on one registry.
func Example() {
	bh := bulkhead.New(bulkhead.Settings{Name: "recs", MaxConcurrent: 8})
	recs := breakerimpl.Pipeline[int, []int]{
		Bulkhead: bh,
		Fallback: fallback.Static[int, []int]{Name: "bestsellers", Value: []int{1, 2, 3}},
	}
	policies := prompolicy.New("shop")
	policies.AddBulkhead(bh)
	results := prompolicy.NewResults("shop")
	reg := prometheus.NewRegistry()
	reg.MustRegister(policies, results)

	res, err := recs.Execute(context.Background(), 7, func(context.Context) ([]int, error) { return []int{8, 9}, nil })
	prompolicy.Observe(results, "recommendations", res, err)

	fmt.Println(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP shop_pipeline_results_total Results of calls through a pipeline, by source (primary, a fallback's name, none when the call failed) and the reason the primary did not serve.
# TYPE shop_pipeline_results_total counter
shop_pipeline_results_total{pipeline="recommendations",reason="none",source="primary"} 1
# HELP shop_bulkhead_max_concurrent Bulkhead slots.
# TYPE shop_bulkhead_max_concurrent gauge
shop_bulkhead_max_concurrent{bulkhead="recs"} 8
`), "shop_pipeline_results_total", "shop_bulkhead_max_concurrent"))
	// Output: <nil>
}
