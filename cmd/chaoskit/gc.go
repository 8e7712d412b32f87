package main

import (
	"os"
	"runtime/debug"
)

// Garbage collection while chaoskit drives load. With Go's default (GOGC
// 100) the collector runs every few milliseconds at 10,000 requests a
// second, and its mark assists stall the goroutines that send the requests
// and read the answers: on two cores the latencies chaoskit measured were
// up to five times raw vegeta's (BENCHMARKS.md, "The harness at scale").
// Collecting at 400 % growth under a soft limit takes that away and keeps
// memory bounded: the live heap of a run stays in the tens of megabytes
// whatever its length, and the limit makes the collector work harder
// before the process passes it.
const (
	loadGCPercent   = 400
	loadMemoryLimit = 200 << 20
)

// tuneGCForLoad sets the collector for the commands that send load (run,
// fuzz, explore) unless the user chose with GOGC or GOMEMLIMIT. It is not
// done for chaoskit demo serve, the service under test.
func tuneGCForLoad() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(loadGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(loadMemoryLimit)
	}
}
