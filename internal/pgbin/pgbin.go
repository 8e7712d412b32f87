// Package pgbin finds the PostgreSQL server programs Debian's postgresql
// package installs, for the dependencies chaoskit starts and for tests.
package pgbin

import (
	"path/filepath"
	"slices"
	"strconv"
)

// Dir returns the newest /usr/lib/postgresql/*/bin, where Debian puts
// initdb and postgres (they are not on PATH), or "".
func Dir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}
