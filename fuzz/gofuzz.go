//go:build gofuzz

package fuzz

// Fuzz is the go-fuzz twin of FuzzSchedule.
func Fuzz(data []byte) int { return checkSchedule(data) }
