package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaoskit/chaoskit/faultbuild"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/shellwords"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/runner"
)

// Side is one of the two builds a diff compares, base or head. The zero
// Side is the target as the scenario writes it (for a demo target, the
// running chaoskit's demo). Rev and Binary name another program; Args are
// added after the target's own arguments; Command replaces the target's
// whole command line.
type Side struct {
	// Name is "base" or "head": the side's label in run directories and
	// reports.
	Name string
	// Rev is a git revision of the module in BuildOptions.Dir, made a
	// fault-injection build (see BuildRevision) before the runs.
	Rev string
	// Binary is a program already built: for a demo target a chaoskit
	// binary (it serves `demo serve`), for a command target the program
	// that replaces target.command.argv[0].
	Binary string
	// Args are added after the target's arguments (the demo's args, or
	// argv[1:] of a command), with {port} and {port:NAME} filled as in
	// the scenario: `--no-fallback` makes the demo a broken variant.
	Args []string
	// Command is a target command: it replaces target.command.argv whole
	// (program and arguments; the scenario's env and dir stay), with
	// {port} and {port:NAME} filled as in the scenario. A program named
	// by a path is relative to the working directory, one without a
	// slash is looked up in PATH. It excludes Rev, Binary and Args, and a
	// demo target (which chaoskit starts itself).
	Command []string
}

// String describes the side for a person: "head (rev abc123, --no-fallback)".
func (s Side) String() string {
	var what []string
	switch {
	case s.Rev != "":
		what = append(what, "revision "+s.Rev)
	case s.Binary != "":
		what = append(what, s.Binary)
	case len(s.Command) > 0:
		what = append(what, "command "+shellwords.Join(s.Command))
	}
	if len(s.Args) > 0 {
		what = append(what, "args "+strings.Join(s.Args, " "))
	}
	if len(what) == 0 {
		what = append(what, "the scenario's target")
	}
	return s.Name + " (" + strings.Join(what, ", ") + ")"
}

// same says whether s and o start the same program with the same
// arguments.
func (s Side) same(o Side) bool {
	return s.Rev == o.Rev && s.Binary == o.Binary && slices.Equal(s.Args, o.Args) && slices.Equal(s.Command, o.Command)
}

// checkSide refuses a side that names two programs, or a command with
// arguments to add to another.
func checkSide(s Side) error {
	n := s.Name
	switch {
	case s.Rev != "" && s.Binary != "":
		return exitcode.New(exitcode.Invalid, "%s: give a revision (--%s) or a binary (--%s-binary), not both", n, n, n)
	case s.Command == nil:
		return nil
	case len(s.Command) == 0 || s.Command[0] == "":
		return exitcode.New(exitcode.Invalid, "--%s-cmd: the command is empty; give the program and its arguments: --%s-cmd 'bin/server --listen 127.0.0.1:{port}'", n, n)
	case s.Rev != "":
		return exitcode.New(exitcode.Invalid, "%s: give a revision (--%s) or a command (--%s-cmd), not both: a command names its own program", n, n, n)
	case s.Binary != "":
		return exitcode.New(exitcode.Invalid, "%s: give a binary (--%s-binary) or a command (--%s-cmd), not both: a command names its own program", n, n, n)
	case len(s.Args) > 0:
		return exitcode.New(exitcode.Invalid, "%s: --%s-arg %s adds to the scenario's command, and --%s-cmd replaces it: write the argument in --%s-cmd", n, n, s.Args[0], n, n)
	}
	return nil
}

// sideTarget is a side made concrete for the runs: the program that serves
// the demo (self) and the scenario with its target changed.
type sideTarget struct {
	Side
	// Program is the binary the side runs: the built revision, Binary, or
	// empty for the scenario's own.
	Program string
}

// apply returns sc with the side's program and arguments in its target,
// and the chaoskit binary that serves a demo target (self unless the side
// replaces it). sc itself is left as it was.
func (s sideTarget) apply(sc *plan.Scenario, self string) (*plan.Scenario, string, error) {
	if s.Program == "" && len(s.Args) == 0 && s.Command == nil {
		return sc, self, nil
	}
	c := *sc
	switch t := sc.Target; {
	case t.Demo != nil && s.Command != nil:
		return nil, "", exitcode.New(exitcode.Invalid, "%s: --%s-cmd replaces target.command, and the scenario's target is the demo, which chaoskit starts itself: give --%s-binary (a chaoskit binary) or --%s-arg", sc.File, s.Name, s.Name, s.Name)
	case t.Demo != nil:
		d := *t.Demo
		d.Args = append(slices.Clone(d.Args), s.Args...)
		if p, ok := plan.ProfileOf(t); ok && p.CheckArgs != nil && len(s.Args) > 0 {
			if err := p.CheckArgs(d.Args); err != nil {
				return nil, "", exitcode.New(exitcode.Invalid, "%s: %s args %s: %v", sc.File, s.Name, strings.Join(s.Args, " "), err)
			}
		}
		c.Target.Demo = &d
		if s.Program != "" {
			self = s.Program
		}
	case t.Command != nil:
		cmd := *t.Command
		cmd.Argv = append(slices.Clone(cmd.Argv), s.Args...)
		if s.Command != nil {
			cmd.Argv = slices.Clone(s.Command)
		}
		if s.Program != "" {
			cmd.Argv[0] = s.Program
		}
		c.Target.Command = &cmd
	default:
		return nil, "", exitcode.New(exitcode.Invalid, "%s: the target is a running service (target.url): a diff starts base and head itself; give the scenario target.command (or target.demo)", sc.File)
	}
	return &c, self, nil
}

// BuildOptions say how a side given as a git revision is built.
type BuildOptions struct {
	// Dir is a directory inside the module, in a git work tree: the
	// revision is of that repository, and the module is the one at the
	// same place in the revision's tree. Default: the working directory.
	Dir string
	// Package is the main package to build, relative to the module
	// (default "."; ./cmd/chaoskit for a demo target).
	Package string
	// CacheDir holds the built binaries, one per revision's tree, package
	// and build flags, and faultbuild's isolated Go build cache. Default:
	// the user cache dir's chaoskit.
	CacheDir string
	// FaultCache is faultbuild's cache: the isolated Go build cache of
	// fault-injection builds and the failpoint-toolexec tool. Default:
	// CacheDir's faultbuild.
	FaultCache string
	// Flags are extra go build flags.
	Flags []string
	// Toolexec is the failpoint-toolexec binary (default: faultbuild's).
	Toolexec string
	// Log receives a line per build and the go command's output.
	Log io.Writer
}

// Built is what BuildRevision made or found.
type Built struct {
	// Binary is the fault-injection build of the revision.
	Binary string
	// Commit and Tree are the revision's commit and tree hashes.
	Commit, Tree string
	// Cached says the binary was built by an earlier diff.
	Cached bool
}

// BuildRevision makes a fault-injection build of a git revision, as
// `chaoskit build` would, without touching the user's work tree: the
// revision's files are exported with `git archive` into a directory of
// its own under the cache, built there and removed. The binary is kept
// in the cache under a key of the revision's tree hash, the package, the
// build flags and the Go and failpoint-toolexec versions, so a second
// diff of the same revision (or of another commit with the same tree)
// starts at once. Uncommitted changes in the work tree are not part of
// any revision and do not matter.
//
// An unknown revision is invalid input (exit 2); a revision that does not
// build is exit 3, with the compiler's output.
func BuildRevision(ctx context.Context, rev string, o BuildOptions) (Built, error) {
	var b Built
	dir := o.Dir
	if dir == "" {
		dir = "."
	}
	if o.Package == "" {
		o.Package = "."
	}
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return b, exitcode.New(exitcode.Invalid, "revision %s: %s is not in a git work tree: %v (give -C the module's directory)", rev, dir, err)
	}
	prefix, err := git(ctx, dir, "rev-parse", "--show-prefix")
	if err != nil {
		return b, &runner.InfraError{Msg: "cannot read the git work tree", Err: err}
	}
	if strings.HasPrefix(rev, "-") {
		return b, exitcode.New(exitcode.Invalid, "revision %q: a revision does not start with -", rev)
	}
	if b.Commit, err = git(ctx, root, "rev-parse", "--verify", "--end-of-options", rev+"^{commit}"); err != nil {
		return b, exitcode.New(exitcode.Invalid, "unknown revision %q in %s (give a branch, a tag or a commit: git log --oneline shows them)", rev, root)
	}
	if b.Tree, err = git(ctx, root, "rev-parse", b.Commit+"^{tree}"); err != nil {
		return b, &runner.InfraError{Msg: "cannot read the tree of " + rev, Err: err}
	}
	if o.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return b, &runner.InfraError{Msg: "no cache directory for the builds", Err: err, Fix: "give --cache"}
		}
		o.CacheDir = filepath.Join(base, "chaoskit")
	}
	if o.FaultCache == "" {
		o.FaultCache = filepath.Join(o.CacheDir, "faultbuild")
	}
	goVersion, err := goEnv(ctx, "GOVERSION")
	if err != nil {
		return b, &runner.InfraError{Msg: "cannot run go env", Err: err}
	}
	key := buildKey(b.Tree, prefix, o.Package, goVersion, o.Toolexec, o.Flags)
	name := filepath.Base(strings.TrimSuffix(filepath.Clean(o.Package), "/..."))
	if name == "." || name == "/" {
		name = filepath.Base(filepath.Join(root, prefix))
	}
	bins := filepath.Join(o.CacheDir, "diff", "bin", key)
	b.Binary = filepath.Join(bins, name)
	if st, err := os.Stat(b.Binary); err == nil && st.Mode().IsRegular() {
		b.Cached = true
		logf(o.Log, "  %s: reused %s (tree %s)\n", rev, b.Binary, short(b.Tree))
		return b, nil
	}
	if err := os.MkdirAll(bins, 0o755); err != nil {
		return b, &runner.InfraError{Msg: "cannot create the build cache", Err: err}
	}
	src, err := os.MkdirTemp(filepath.Join(o.CacheDir, "diff"), "src-")
	if err != nil {
		return b, &runner.InfraError{Msg: "cannot create the build directory", Err: err}
	}
	defer os.RemoveAll(src)
	if err := exportTree(ctx, root, b.Commit, src); err != nil {
		return b, &runner.InfraError{Msg: "cannot export revision " + rev, Err: err}
	}
	logf(o.Log, "  %s: building %s at %s (tree %s)\n", rev, o.Package, short(b.Commit), short(b.Tree))
	tmp := b.Binary + ".tmp"
	var out bytes.Buffer
	err = faultbuild.Build(ctx, faultbuild.Options{Dir: filepath.Join(src, prefix), Package: o.Package, Output: tmp,
		CacheDir: o.FaultCache, Toolexec: o.Toolexec, Flags: o.Flags, Log: &out})
	if err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			return b, ctx.Err()
		}
		// The compiler names the exported copy's files; the user knows
		// them by their place in the module.
		msg := strings.ReplaceAll(err.Error(), filepath.Join(src, prefix)+string(filepath.Separator), "")
		return b, &runner.InfraError{Msg: fmt.Sprintf("revision %s (%s) does not build", rev, short(b.Commit)), Err: errors.New(msg)}
	}
	if err := os.Rename(tmp, b.Binary); err != nil {
		return b, &runner.InfraError{Msg: "cannot keep the build", Err: err}
	}
	return b, nil
}

// buildKey is the cache key of a build: everything its binary depends on.
func buildKey(tree, prefix, pkg, goVersion, toolexec string, flags []string) string {
	h := sha256.New()
	for _, s := range append([]string{tree, prefix, pkg, goVersion, faultbuild.ToolexecVersion, toolexec}, flags...) {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// exportTree writes the files of commit into dst, from `git archive`: the
// repository's work tree and index are never touched.
func exportTree(ctx context.Context, root, commit, dst string) error {
	cmd := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	xerr := untar(pipe, dst)
	_, _ = io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return xerr
}

// untar extracts a tar stream from git archive into dst: directories,
// regular files and symbolic links, no name outside dst.
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			if h.Typeflag == tar.TypeXGlobalHeader {
				continue
			}
			return fmt.Errorf("archive entry %q outside the tree", h.Name)
		}
		path := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			err = writeEntry(path, tr, h.FileInfo().Mode().Perm())
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
				err = os.Symlink(h.Linkname, path)
			}
		}
		if err != nil {
			return err
		}
	}
}

func writeEntry(path string, r io.Reader, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// git runs a git command in dir and returns its output, trimmed.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", errors.New(firstLine(msg))
		}
		return "", err
	}
	return strings.TrimSpace(stdout.String()), nil
}

func goEnv(ctx context.Context, name string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", name).Output()
	return strings.TrimSpace(string(out)), err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
