package fuzz_test

import (
	"path/filepath"
	"testing"

	"github.com/chaoskit/chaoskit/internal/fuzzseed"
	"github.com/chaoskit/chaoskit/internal/fuzztarget"
)

// FuzzSchedule drives the schedule decoder: every byte string is a valid
// schedule of the fault space that renders to a loadable scenario and
// loads back as itself. The body (fuzztarget.Schedule) is shared with
// go-fuzz.
func FuzzSchedule(f *testing.F) {
	fuzzseed.Add(f, filepath.Join("..", "internal", "fuzztarget", "testdata", "fuzz", "corpus", "FuzzSchedule", "*"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) { fuzztarget.Schedule(data) })
}
