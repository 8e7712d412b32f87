package shed_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl/shed"
)

// BenchmarkShedder is an admitted request: Allow, then Done with success.
func BenchmarkShedder(b *testing.B) {
	s := shed.New(shed.Settings{CPU: newCPU(0.1)})
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := s.Allow(ctx)
			if err != nil {
				b.Fatal(err)
			}
			p.Done(nil)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := s.Allow(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				p.Done(nil)
			}
		})
	})
}
