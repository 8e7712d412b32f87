// Package faultbuild makes fault-injection builds of Go programs: failpoint
// markers are rewritten at compile time by failpoint-toolexec (go build
// -toolexec), so the source tree stays clean.
//
// Two traps of toolexec builds are handled here:
//
//   - The Go build cache does not know that the toolexec tool changed the
//     code, so normal and fault-injection objects would be swapped silently
//     in both directions. Fault-injection builds therefore get a GOCACHE of
//     their own, never shared with normal builds.
//   - failpoint-toolexec writes rewritten files under $TMPDIR/failpoint-toolexec,
//     shared by every build on the machine. Each build gets a private TMPDIR
//     so that concurrent builds cannot overwrite each other's files.
package faultbuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ToolexecModule is the failpoint module failpoint-toolexec comes from;
// ToolexecVersion is the version chaoskit pins (the one in its go.mod).
const (
	toolexecPackage = "github.com/pingcap/failpoint/failpoint-toolexec"
	ToolexecVersion = "v0.0.0-20240528011301-b51a646c7c86"
)

// Options describe one fault-injection build.
type Options struct {
	// Dir is the directory go build runs in: inside the module whose markers
	// are rewritten (failpoint-toolexec rewrites only that module's packages).
	Dir string
	// Package is the main package to build, e.g. "./cmd/server".
	Package string
	// Output is the binary to write.
	Output string
	// CacheDir holds the isolated GOCACHE, the toolexec binary and scratch
	// space; it is created if needed. Default: the user cache dir's
	// chaoskit/faultbuild.
	CacheDir string
	// Toolexec is the failpoint-toolexec binary; empty means build the
	// pinned version into CacheDir.
	Toolexec string
	// Flags are extra go build flags (e.g. -ldflags ...).
	Flags []string
	// Log receives the go command's output; nil keeps it for the error.
	Log io.Writer
}

// defaultCacheDir returns the default CacheDir.
func defaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "chaoskit", "faultbuild"), nil
}

// Build makes the fault-injection build described by o.
func Build(ctx context.Context, o Options) error {
	if o.Package == "" || o.Output == "" {
		return fmt.Errorf("faultbuild: a package and an output are required")
	}
	if o.CacheDir == "" {
		var err error
		if o.CacheDir, err = defaultCacheDir(); err != nil {
			return err
		}
	}
	cacheDir, err := filepath.Abs(o.CacheDir)
	if err != nil {
		return err
	}
	o.CacheDir = cacheDir
	if err := os.MkdirAll(o.CacheDir, 0o755); err != nil {
		return err
	}
	if o.Toolexec == "" {
		var err error
		if o.Toolexec, err = Toolexec(ctx, o.CacheDir, o.Log); err != nil {
			return err
		}
	}
	toolexec, err := filepath.Abs(o.Toolexec)
	if err != nil {
		return err
	}
	out, err := filepath.Abs(o.Output)
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(o.CacheDir, "tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	args := append([]string{"build", "-toolexec=" + toolexec, "-o", out}, o.Flags...)
	args = append(args, o.Package)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), "GOCACHE="+filepath.Join(o.CacheDir, "gocache"), "TMPDIR="+scratch)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if o.Log != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&buf, o.Log), io.MultiWriter(&buf, o.Log)
	}
	err = cmd.Run()
	// failpoint-toolexec logs a failed rewrite but lets the build go on
	// with the original file: that would be a binary with inert markers.
	// (It also logs every compile that fails; that is an ordinary error.)
	if rewriteFailed(buf.String()) {
		return fmt.Errorf("fault-injection build of %s: failpoint-toolexec could not rewrite markers:\n%s", o.Package, strings.TrimSpace(buf.String()))
	}
	if err != nil {
		return fmt.Errorf("fault-injection build of %s: %v\n%s", o.Package, err, strings.TrimSpace(buf.String()))
	}
	return nil
}

// Toolexec returns the pinned failpoint-toolexec binary under cacheDir,
// installing it with `go install` from the module proxy if it is missing.
func Toolexec(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	cacheDir, err := filepath.Abs(cacheDir)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cacheDir, "tools", ToolexecVersion)
	exe := filepath.Join(bin, "failpoint-toolexec")
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	cmd := exec.CommandContext(ctx, "go", "install", toolexecPackage+"@"+ToolexecVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if log != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(&buf, log), io.MultiWriter(&buf, log)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("install %s@%s: %v\n%s", toolexecPackage, ToolexecVersion, err, strings.TrimSpace(buf.String()))
	}
	return exe, nil
}

// rewriteFailed reports whether failpoint-toolexec's output says it failed
// to rewrite a file, as opposed to a compile failing.
func rewriteFailed(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "[failpoint-toolexec]") && !strings.Contains(line, "failed to run command") {
			return true
		}
	}
	return false
}
