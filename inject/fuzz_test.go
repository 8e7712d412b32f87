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

// TestTermSeedsCoverEveryAction keeps the seed corpus in step with
// Actions: the first byte of a seed picks an action by its place in
// Actions, so an action added in the middle shifts the seeds after it
// (the raw-term seed once became a grpc seed no translation accepted).
// Every action must have a seed that checkTerm accepts.
func TestTermSeedsCoverEveryAction(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "corpus", "*"))
	if err != nil {
		t.Fatal(err)
	}
	seeded := map[Action]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if checkTerm(data) == 1 {
			seeded[Actions[int(data[0])%len(Actions)]] = true
		}
	}
	for _, a := range Actions {
		if !seeded[a] {
			t.Errorf("no seed in testdata/fuzz/corpus gives a %s fault that translates", a)
		}
	}
}
