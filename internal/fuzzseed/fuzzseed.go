// Package fuzzseed adds seed inputs from files to a native fuzz target, so
// that `go test -fuzz` and go-fuzz start from the same corpus.
package fuzzseed

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusDir is where a package keeps the raw seeds go-fuzz (make gofuzz)
// starts from, relative to the package.
var corpusDir = filepath.Join("testdata", "fuzz", "corpus")

// Add adds every file that matches one of the glob patterns as a seed,
// the files of corpusDir when no pattern is given.
func Add(f *testing.F, patterns ...string) {
	f.Helper()
	if len(patterns) == 0 {
		patterns = []string{filepath.Join(corpusDir, "*")}
	}
	for _, p := range patterns {
		files, err := filepath.Glob(p)
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
	}
}
