package plan_test

import (
	"path/filepath"
	"testing"

	"github.com/chaoskit/chaoskit/internal/fuzzseed"
	"github.com/chaoskit/chaoskit/internal/fuzztarget"
)

// FuzzParse feeds the loader any bytes: it must load a valid scenario or
// report errors at positions in the file, never panic. The body
// (fuzztarget.Parse) is shared with go-fuzz; the seeds in fuzztarget's
// testdata/fuzz/corpus/FuzzParse, and the bundled scenarios, serve both.
func FuzzParse(f *testing.F) {
	fuzzseed.Add(f, filepath.Join("..", "internal", "fuzztarget", "testdata", "fuzz", "corpus", "FuzzParse", "*"), filepath.Join("..", "scenarios", "*.yaml"), filepath.Join("..", "scenarios", "fuzz", "*.yaml"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzztarget.Parse(data) })
}
