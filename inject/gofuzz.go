//go:build gofuzz

package inject

// Fuzz is the go-fuzz twin of FuzzTerm.
func Fuzz(data []byte) int { return checkTerm(data) }
