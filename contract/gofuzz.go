//go:build gofuzz

package contract

// Fuzz is the go-fuzz twin of FuzzExpect.
func Fuzz(data []byte) int { return checkExpect(data) }
