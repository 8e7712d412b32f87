package breakerimpl_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
)

type row struct {
	ID   int
	Name string
}

func readRow(context.Context) (row, error) { return row{ID: 1, Name: "one"}, nil }

// BenchmarkPipelineSuccess is the success path of a read protected by an
// error-rate breaker and a last-known-good cache: the breaker admits, the
// call succeeds, the cache stores the value over the one it had.
func BenchmarkPipelineSuccess(b *testing.B) {
	p := breakerimpl.Pipeline[string, row]{
		Breaker:  circuitbreaker.New(circuitbreaker.Settings{}),
		Fallback: fallback.NewCache[string, row](fallback.CacheSettings{}),
	}
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := p.Execute(ctx, "row/1", readRow); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := p.Execute(ctx, "row/1", readRow); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkPipelineDegrade is BenchmarkPipelineSuccess's serial read with
// a Degrade guard, against none in the same run: a released degrade
// switch (one clock read and two atomic loads while no reading is due), or
// a health score, which also records each call's latency and outcome on
// its rolling windows.
func BenchmarkPipelineDegrade(b *testing.B) {
	score := health.New(health.Settings{})
	guards := []struct {
		name string
		g    breakerimpl.Guard
	}{
		{"none", nil},
		{"switch", degrade.New(degrade.Settings{Threshold: 1, Signal: func() float64 { return 0 }})},
		{"health-score", score},
	}
	ctx := context.Background()
	for _, gd := range guards {
		p := breakerimpl.Pipeline[string, row]{
			Degrade:  gd.g,
			Breaker:  circuitbreaker.New(circuitbreaker.Settings{}),
			Fallback: fallback.NewCache[string, row](fallback.CacheSettings{}),
		}
		b.Run(gd.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, err := p.Execute(ctx, "row/1", readRow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
