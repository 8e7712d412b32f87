//go:build race

package inproc

// raceEnabled says the race detector is on: it slows code several times.
const raceEnabled = true
