//go:build gofuzz

package fallbackfuzz

// Fuzz is the go-fuzz entry point: go-fuzz-build -func Fuzz builds it.
func Fuzz(data []byte) int { return fuzzChain(data) }
