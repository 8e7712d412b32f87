package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// A program path relative to a relative scenario directory is resolved to
// an absolute one, so that starting it in that directory still finds it.
func TestResolveProgramRelativeDir(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "chaoskit", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "chaoskit", "bin", "svc"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	p, err := resolveProgram("./bin/svc", "chaoskit")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "chaoskit", "bin", "svc"); p != want {
		t.Errorf("resolveProgram = %q, want %q", p, want)
	}
}
