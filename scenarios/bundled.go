package scenarios

import "embed"

// bundled holds the scenarios shipped with chaoskit, so `chaoskit run
// --bundled` works from any directory.
//
//go:embed *.yaml
var bundled embed.FS
