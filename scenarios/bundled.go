//go:build !gofuzz

// Package scenarios holds the scenario files shipped with chaoskit, embedded
// so that `chaoskit run --bundled` works from any directory. Package plan
// reads them; this package only carries the files.
package scenarios

import "embed"

// go-fuzz-build copies embedded files by the literal text of the directive,
// so a go-fuzz build (gofuzz.go) leaves every file system empty.

// Main holds the bundled scenarios on the embedded demo (*.yaml).
//
//go:embed *.yaml
var Main embed.FS

// Fuzz holds the bundled fuzz scenarios (fuzz/*.yaml). They live in a
// directory of their own so that running the bundled scenarios (or
// scenarios/*.yaml) leaves them out.
//
//go:embed fuzz/*.yaml
var Fuzz embed.FS

// Deps holds the scenarios on real dependencies, Postgres and Redis
// (deps/*.yaml): `make demo-deps` runs them, `make demo` does not, since
// they need the servers installed.
//
//go:embed deps/*.yaml
var Deps embed.FS
