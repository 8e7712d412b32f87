//go:build gofuzz

package scenarios

import "embed"

// Fuzz is the go-fuzz twin of FuzzParse.
func Fuzz(data []byte) int { return checkParse(data) }

// A go-fuzz build bundles no scenarios (see bundled.go).
var bundled, bundledFuzz, bundledDeps embed.FS
