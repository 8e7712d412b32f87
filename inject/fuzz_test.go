package inject

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzTerm checks that faults translate into failpoint terms that
// pingcap/failpoint parses and that hand the marker the fault back. The
// body is shared with go-fuzz (gofuzz.go); the seeds in
// testdata/fuzz/corpus serve both.
func FuzzTerm(f *testing.F) {
	// inject is a module of its own, so it reads its seeds itself rather
	// than through the main module's internal/fuzzseed.
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "corpus", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkTerm(data) })
}
