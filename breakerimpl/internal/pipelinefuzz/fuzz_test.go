package pipelinefuzz

import "testing"

// FuzzPipeline checks a Pipeline of the real policies on random calls;
// fuzzPipeline (fuzz.go) holds the body it shares with go-fuzz.
func FuzzPipeline(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 1, 2, 1, 1, 0x35, 0, 0x36, 1, 1, 1, 0x37, 3, 0x38, 4, 0x10, 0x39, 0, 0x20, 0x3a, 2, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzPipeline(data) })
}
