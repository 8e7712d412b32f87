package bulkhead_test

import (
	"context"
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
)

// BenchmarkBulkhead is the two-step success path: take a slot, give it back.
func BenchmarkBulkhead(b *testing.B) {
	for _, tc := range []struct {
		name string
		s    bulkhead.Settings
	}{
		{"semaphore", bulkhead.Settings{MaxConcurrent: 1 << 20}},
		{"queue", bulkhead.Settings{MaxConcurrent: 1 << 20, MaxWait: 1 << 30}},
	} {
		bh := bulkhead.New(tc.s)
		ctx := context.Background()
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := bh.Allow(ctx)
				if err != nil {
					b.Fatal(err)
				}
				p.Done(nil)
			}
		})
		b.Run(tc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := bh.Allow(ctx)
					if err != nil {
						b.Error(err)
						return
					}
					p.Done(nil)
				}
			})
		})
	}
}
