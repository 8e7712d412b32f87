//go:build !race

package inproc

const raceEnabled = false
