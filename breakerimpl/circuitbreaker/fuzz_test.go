package circuitbreaker_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker/internal/model"
)

// FuzzBreakerModel replays random sequences of calls (successes, failures,
// slow and ignored calls, held permits), time advances, settings changes
// and overrides on a breaker and on a reference model, and fails on the
// first disagreement in state, admitted calls, counts or lifetime
// counters. The body is model.Check, which go-fuzz runs too (model.Fuzz).
func FuzzBreakerModel(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 1, 1, 1, 0, 4, 50, 0, 0, 0},                   // consecutive: trip, wait, close
		{1, 0, 1, 1, 1, 1, 4, 100, 1, 4, 20, 0},           // error rate across buckets
		{2, 2, 2, 2, 4, 60, 7, 7, 7, 8, 9},                // slow calls, held probes
		{3, 6, 0, 0, 6, 2, 6, 1, 1, 1, 1, 6, 2, 1},        // overrides
		{0, 1, 1, 5, 0, 1, 5, 2, 1, 4, 255, 1, 4, 255, 0}, // updates while open
		{2, 7, 4, 5, 8, 7, 4, 6, 8},                       // held calls at and past the slow threshold
		{0, 1, 1, 1, 4, 50, 7, 7, 4, 110, 4, 60, 7, 9, 8}, // probes held past MaxHalfOpenWait
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := model.Check(data); err != nil {
			t.Fatal(err)
		}
	})
}
