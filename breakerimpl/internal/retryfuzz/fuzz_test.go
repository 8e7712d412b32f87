package retryfuzz

import "testing"

// FuzzSchedule checks the retry schedule and the budget on random calls;
// fuzzSchedule (fuzz.go) holds the body it shares with go-fuzz.
func FuzzSchedule(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{7, 99, 3, 20, 0, 10, 1, 10, 10, 42, 0, 200, 200, 200, 200, 70, 0})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzSchedule(data) })
}
