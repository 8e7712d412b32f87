//go:build !gofuzz

package scenarios

import "embed"

// bundled holds the scenarios shipped with chaoskit, so `chaoskit run
// --bundled` works from any directory.
//
// go-fuzz-build copies embedded files by the literal text of the directive,
// so a go-fuzz build (gofuzz.go) leaves both file systems empty.
//
//go:embed *.yaml
var bundled embed.FS

// bundledFuzz holds the fuzz scenarios shipped with chaoskit. They live in
// a directory of their own so that running the bundled scenarios (or
// scenarios/*.yaml) leaves them out.
//
//go:embed fuzz/*.yaml
var bundledFuzz embed.FS

// bundledDeps holds the scenarios on real dependencies (Postgres, Redis)
// shipped with chaoskit: `make demo-deps` runs them, `make demo` does not,
// since they need the servers installed.
//
//go:embed deps/*.yaml
var bundledDeps embed.FS
