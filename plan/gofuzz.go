//go:build gofuzz

package plan

// Fuzz is the go-fuzz twin of FuzzParse.
func Fuzz(data []byte) int { return checkParse(data) }
