//go:build gofuzz

package model

// Fuzz is the go-fuzz entry point (go-fuzz-build -tags gofuzz): it panics
// on the first disagreement between the breaker and the model.
func Fuzz(data []byte) int {
	if err := Check(data); err != nil {
		panic(err)
	}
	return 1
}
