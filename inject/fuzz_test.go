package inject

import (
	"testing"

	"github.com/chaoskit/chaoskit/internal/fuzzseed"
)

// FuzzTerm checks that faults translate into failpoint terms that
// pingcap/failpoint parses and that hand the marker the fault back. The
// body is shared with go-fuzz (gofuzz.go); the seeds in
// testdata/fuzz/corpus serve both.
func FuzzTerm(f *testing.F) {
	fuzzseed.Add(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkTerm(data) })
}
