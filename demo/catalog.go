// Package demo is the service `make demo` attacks: a small shop backend on a
// real SQLite database, built on breakerimpl, with fault points
// (inject.Switch, live in any build: go build, go install) where its
// dependencies can fail and flags that break its resilience on purpose,
// so every bundled contract can be shown to fail as well as pass.
package demo

// Import paths of the demo packages that hold fault points.
const (
	storePkg     = "github.com/chaoskit/chaoskit/demo/store"
	cachePkg     = "github.com/chaoskit/chaoskit/demo/cache"
	recommendPkg = "github.com/chaoskit/chaoskit/demo/recommend"
	searchPkg    = "github.com/chaoskit/chaoskit/demo/search"
)

// Failpoints lists the full paths of every fault point in the demo.
// TestFailpointsMatchSource keeps it equal to what a scan of the source
// finds, so chaoskit can resolve and check fault points of demo scenarios
// without the source at hand.
func Failpoints() []string {
	return []string{
		cachePkg + "/cacheGet",
		recommendPkg + "/recommendationsCall",
		recommendPkg + "/recommendationsGRPC",
		searchPkg + "/searchBurn",
		storePkg + "/orderWrite",
		storePkg + "/productQuery",
	}
}

// FaultPointsLive reports whether the demo's fault points can fire: always,
// since they are switches (inject.Switch), switched at run time in any
// build, not failpoint markers that only a rewritten build makes live.
func FaultPointsLive() bool { return true }
