package prombreaker_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/prombreaker"
)

func ExampleNewCollector() {
	products := circuitbreaker.New(circuitbreaker.Settings{Name: "products", Clock: clock.NewFake(time.Time{})})
	reg := prometheus.NewRegistry()
	reg.MustRegister(prombreaker.NewCollector("shop", products))
	products.ForceOpen("maintenance")

	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() != "shop_circuit_breaker_state" {
			continue
		}
		for _, m := range f.GetMetric() {
			fmt.Println(m.GetLabel()[1].GetValue(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// closed 0
	// half_open 0
	// open 1
}
