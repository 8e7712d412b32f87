package circuitbreaker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
)

func succeed(context.Context) (int, error) { return 1, nil }

var errBench = errors.New("down")

// openBreaker returns a breaker that has tripped and stays open for the
// whole benchmark.
func openBreaker(b *testing.B) *circuitbreaker.Breaker {
	cb := circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ConsecutiveFailures{Threshold: 1}, OpenDuration: 1 << 40})
	p, err := cb.Allow(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	p.Done(errBench)
	if cb.State() != circuitbreaker.Open {
		b.Fatal("breaker did not open")
	}
	return cb
}

func BenchmarkBreakerSuccess(b *testing.B) {
	for _, tc := range []struct {
		name string
		rule circuitbreaker.Rule
	}{
		{"error-rate", circuitbreaker.ErrorRate{}},
		{"consecutive", circuitbreaker.ConsecutiveFailures{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cb := circuitbreaker.New(circuitbreaker.Settings{Rule: tc.rule})
			ctx := context.Background()
			b.ReportAllocs()
			for range b.N {
				if _, err := circuitbreaker.Execute(ctx, cb, succeed); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			cb := circuitbreaker.New(circuitbreaker.Settings{Rule: tc.rule})
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := circuitbreaker.Execute(ctx, cb, succeed); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkBreakerTwoStep(b *testing.B) {
	cb := circuitbreaker.New(circuitbreaker.Settings{})
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		p, err := cb.Allow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Done(nil)
	}
}

func BenchmarkBreakerOpen(b *testing.B) {
	cb := openBreaker(b)
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := circuitbreaker.Execute(ctx, cb, succeed); err == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := circuitbreaker.Execute(ctx, cb, succeed); err == nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
