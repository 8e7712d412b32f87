package contract_test

import (
	"path/filepath"
	"testing"

	"github.com/chaoskit/chaoskit/internal/fuzzseed"
	"github.com/chaoskit/chaoskit/internal/fuzztarget"
)

// FuzzExpect feeds the expectation parser any text: it compiles, or fails
// with a syntax error at a column of the text, and what compiles judges a
// recorded run without panicking. The body (fuzztarget.Expect) is shared
// with go-fuzz; fuzztarget's testdata/fuzz/corpus/FuzzExpect holds the
// seeds of both.
func FuzzExpect(f *testing.F) {
	fuzzseed.Add(f, filepath.Join("..", "internal", "fuzztarget", "testdata", "fuzz", "corpus", "FuzzExpect", "*"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzztarget.Expect(data) })
}
