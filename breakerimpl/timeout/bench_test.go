package timeout_test

import (
	"context"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// BenchmarkTimeout is the cost of bounding a call that returns at once,
// next to context.WithTimeout for the same work.
func BenchmarkTimeout(b *testing.B) {
	tm := timeout.New(timeout.Settings{Timeout: time.Second})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, ctx := range map[string]context.Context{"background": context.Background(), "cancellable": parent} {
		b.Run("breakerimpl/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := tm.Begin(ctx)
				if err := tm.End(c, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("breakerimpl/"+name+"/waits-on-done", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c := tm.Begin(ctx)
				select {
				case <-c.Done():
					b.Fatal("done")
				default:
				}
				tm.End(c, nil)
			}
		})
		b.Run("context.WithTimeout/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, cancel := context.WithTimeout(ctx, time.Second)
				select {
				case <-c.Done():
					b.Fatal("done")
				default:
				}
				cancel()
			}
		})
	}
}
