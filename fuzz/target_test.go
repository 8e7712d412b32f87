package fuzz

import (
	"testing"

	"github.com/chaoskit/chaoskit/internal/fuzzseed"
)

// FuzzSchedule drives the schedule decoder: every byte string is a valid
// schedule of the fault space that renders to a loadable scenario and
// loads back as itself. The body is shared with go-fuzz (gofuzz.go).
func FuzzSchedule(f *testing.F) {
	fuzzseed.Add(f)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) { checkSchedule(data) })
}
