//go:build gofuzz

package scenarios

import "embed"

// A go-fuzz build bundles no scenarios (see bundled.go).
var Main, Fuzz, Deps embed.FS
