package fallbackfuzz

import "testing"

// FuzzChain checks the fallback strategies, chained and nested, against a
// model; fuzzChain (fuzz.go) holds the body it shares with go-fuzz.
func FuzzChain(f *testing.F) {
	f.Add([]byte{})
	// A chain of a cache (1 s staleness, room for 2 keys), a func and a
	// static: remember keys 0 and 1, fail while fresh, age past the
	// staleness, fail with the func failing and not.
	f.Add([]byte{3, 3, 1, 1, 1, 2, 0, 0x00, 0x04, 0x03, 0, 0x02, 2, 0x03, 1, 0x07, 0, 0x08, 0x0b, 1})
	// A nested chain: a chain of two caches inside a chain before a func.
	f.Add([]byte{3, 2, 3, 1, 2, 0, 1, 0, 7, 2, 0x00, 0x04, 0x08, 0x0c, 0x10, 0x03, 0x07, 0x02, 3, 0x13, 1})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzChain(data) })
}

// The seeds make calls, and the correct strategies pass the model on them.
func TestSeeds(t *testing.T) {
	for _, data := range [][]byte{
		{0, 3},                // a static fallback alone, the primary failing
		{1, 0, 7, 0x00, 0x03}, // a cache alone: remember key 0, fail on it
		{2, 0x03, 1, 0x03, 0}, // a func alone, failing then serving
		{3, 0, 0x03},          // an empty chain
	} {
		if fuzzChain(data) != 1 {
			t.Errorf("input %v made no call", data)
		}
	}
}
