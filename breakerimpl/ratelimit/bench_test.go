package ratelimit_test

import (
	"context"
	"testing"

	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
)

// BenchmarkAllow is an admitted call through each limiter (limits far
// above the benchmark's rate), next to rate.Limiter.Allow, which reads
// time.Now.
func BenchmarkAllow(b *testing.B) {
	ctx := context.Background()
	for name, g := range map[string]breakerimpl.Guard{
		"token-bucket":   ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 1e12, Burst: 1 << 30}),
		"sliding-window": ratelimit.NewSlidingWindow(ratelimit.WindowSettings{Limit: 1 << 60}),
		"concurrency":    ratelimit.NewConcurrency(ratelimit.ConcurrencySettings{Max: 1 << 30}),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := g.Allow(ctx)
				if err != nil {
					b.Fatal(err)
				}
				p.Done(nil)
			}
		})
	}
	b.Run("x/time/rate", func(b *testing.B) {
		lim := rate.NewLimiter(1e12, 1<<30)
		b.ReportAllocs()
		for b.Loop() {
			if !lim.Allow() {
				b.Fatal("refused")
			}
		}
	})
}
