// Package failpointenv keeps the chaoskit command from serving a failpoint
// control endpoint of its own.
//
// pingcap/failpoint serves its open control endpoint on GO_FAILPOINTS_HTTP,
// and package inject its guarded one on CHAOSKIT_FAILPOINTS_HTTP, each from
// an init function, in any process that links them. The chaoskit binary links
// both (its demo target is built in), so a user who had exported either
// variable in the shell, for a service of their own, would have every
// chaoskit command listen there: a fault endpoint into chaoskit itself.
//
// Importing this package takes both variables out of the process's
// environment before those init functions read them. The Go specification
// orders package initialisation by import path among the packages whose
// imports are done ("the first uninitialized package in the list [sorted by
// import path] for which all imports are already initialized"). This
// package imports only os, which pingcap/failpoint imports too, and its path
// sorts before github.com/pingcap/failpoint, so it is initialised first;
// inject imports failpoint and comes after both. Only `chaoskit demo
// serve`, the target a scenario starts, serves what was taken (see Taken):
// the variable reaches it because the run hands it over explicitly, never
// by inheritance.
package failpointenv

import "os"

// The variables that make a process listen, as pingcap/failpoint and
// package inject name them (inject.ControlEnv; this package cannot import
// inject, whose init it must precede).
const (
	pingcapHTTP  = "GO_FAILPOINTS_HTTP"
	chaoskitHTTP = "CHAOSKIT_FAILPOINTS_HTTP"
)

// Addresses are the values taken out of the environment at start-up; empty
// when the variable was unset or empty.
type Addresses struct {
	// Pingcap is GO_FAILPOINTS_HTTP: pingcap/failpoint's open endpoint.
	Pingcap string
	// Chaoskit is CHAOSKIT_FAILPOINTS_HTTP: package inject's endpoint,
	// which requires the token in CHAOSKIT_FAILPOINTS_TOKEN.
	Chaoskit string
}

var taken Addresses

func init() {
	taken.Pingcap = take(pingcapHTTP)
	taken.Chaoskit = take(chaoskitHTTP)
}

func take(name string) string {
	v, ok := os.LookupEnv(name)
	if ok {
		os.Unsetenv(name)
	}
	return v
}

// Taken returns the addresses the process was started with. Nothing
// listens on them unless the caller serves them.
func Taken() Addresses { return taken }
