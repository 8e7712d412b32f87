//go:build gofuzz

package retryfuzz

// Fuzz is the go-fuzz entry point: go-fuzz-build -func Fuzz builds it.
func Fuzz(data []byte) int { return fuzzSchedule(data) }
