package fuzz

import (
	"os"
	"path/filepath"
	"testing"
)

// addCorpus adds the raw seed inputs of testdata/fuzz/corpus, which
// go-fuzz (make gofuzz) starts from too.
func addCorpus(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "corpus", "*"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzSchedule drives the schedule decoder: every byte string is a valid
// schedule of the fault space that renders to a loadable scenario and
// loads back as itself. The body is shared with go-fuzz (gofuzz.go).
func FuzzSchedule(f *testing.F) {
	addCorpus(f)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) { checkSchedule(data) })
}
