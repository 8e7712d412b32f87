package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/diff"
	"github.com/chaoskit/chaoskit/faultbuild"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/testserver"
	"github.com/chaoskit/chaoskit/plan"
)

func TestSideApply(t *testing.T) {
	demo := &plan.Scenario{File: "s.yaml", Target: plan.Target{Demo: &plan.DemoTarget{Args: []string{"--db-timeout", "50ms"}}}}
	cmd := &plan.Scenario{File: "s.yaml", Target: plan.Target{Command: &plan.Command{Argv: []string{"bin/svc", "--listen", "127.0.0.1:{port}"}}}}
	url := &plan.Scenario{File: "s.yaml", Target: plan.Target{URL: "http://127.0.0.1:8080"}}
	for _, tt := range []struct {
		name     string
		sc       *plan.Scenario
		side     sideTarget
		wantArgv []string // demo args or command argv
		wantSelf string
		wantCode int
	}{
		{"demo as written", demo, sideTarget{}, []string{"--db-timeout", "50ms"}, "self", 0},
		{"demo with args", demo, sideTarget{Side: Side{Args: []string{"--no-fallback"}}}, []string{"--db-timeout", "50ms", "--no-fallback"}, "self", 0},
		{"demo of another build", demo, sideTarget{Program: "/b/chaoskit"}, []string{"--db-timeout", "50ms"}, "/b/chaoskit", 0},
		{"command of another build", cmd, sideTarget{Program: "/b/svc", Side: Side{Args: []string{"--slow"}}}, []string{"/b/svc", "--listen", "127.0.0.1:{port}", "--slow"}, "self", 0},
		{"running service", url, sideTarget{Side: Side{Args: []string{"--x"}}}, nil, "", exitcode.Invalid},
		{"target command", cmd, sideTarget{Program: "/b/other", Side: Side{Command: []string{"bin/other", "-addr", "127.0.0.1:{port}", "--slow"}}},
			[]string{"/b/other", "-addr", "127.0.0.1:{port}", "--slow"}, "self", 0},
		{"target command for the demo", demo, sideTarget{Side: Side{Name: "head", Command: []string{"svc"}}}, nil, "", exitcode.Invalid},
		{"target command for a running service", url, sideTarget{Side: Side{Command: []string{"svc"}}}, nil, "", exitcode.Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, self, err := tt.side.apply(tt.sc, "self")
			if code := exitcode.Of(err); code != tt.wantCode {
				t.Fatalf("exit code %d (%v), want %d", code, err, tt.wantCode)
			}
			if err != nil {
				return
			}
			argv := []string(nil)
			if got.Target.Demo != nil {
				argv = got.Target.Demo.Args
			} else {
				argv = got.Target.Command.Argv
			}
			if strings.Join(argv, " ") != strings.Join(tt.wantArgv, " ") || self != tt.wantSelf {
				t.Errorf("argv %q self %q, want %q %q", argv, self, tt.wantArgv, tt.wantSelf)
			}
		})
	}
	// The scenario itself is never changed: both sides start from it.
	if len(demo.Target.Demo.Args) != 2 || cmd.Target.Command.Argv[0] != "bin/svc" {
		t.Errorf("apply changed the scenario: %q %q", demo.Target.Demo.Args, cmd.Target.Command.Argv)
	}
}

// TestCheckSide refuses a side that names its program twice, or adds
// arguments to a command it also replaces, naming the flags.
func TestCheckSide(t *testing.T) {
	for _, tt := range []struct {
		side Side
		says string // "" for a side that is fine
	}{
		{Side{Name: "head", Rev: "main"}, ""},
		{Side{Name: "head", Binary: "b", Args: []string{"--x"}}, ""},
		{Side{Name: "head", Command: []string{"bin/svc", "--x"}}, ""},
		{Side{Name: "head", Rev: "main", Binary: "b"}, "--head-binary"},
		{Side{Name: "head", Command: []string{"bin/svc"}, Rev: "main"}, "give a revision (--head) or a command (--head-cmd), not both"},
		{Side{Name: "base", Command: []string{"bin/svc"}, Binary: "b"}, "give a binary (--base-binary) or a command (--base-cmd), not both"},
		{Side{Name: "head", Command: []string{"bin/svc"}, Args: []string{"--slow"}}, "write the argument in --head-cmd"},
		{Side{Name: "head", Command: []string{}}, "--head-cmd: the command is empty"},
	} {
		err := checkSide(tt.side)
		if tt.says == "" {
			if err != nil {
				t.Errorf("%v: %v", tt.side, err)
			}
			continue
		}
		if exitcode.Of(err) != exitcode.Invalid || err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%v: %v (exit %d), want exit 2 saying %q", tt.side, err, exitcode.Of(err), tt.says)
		}
	}
}

// TestBuildRevision builds two revisions of the diff fixture from a git
// repository, reuses the builds, and leaves the work tree as it was
// (uncommitted changes included).
func TestBuildRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a service twice; runs without -short")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	repo := testserver.DiffRepo(t, root)
	// An uncommitted change does not matter: no revision holds it.
	if err := os.WriteFile(filepath.Join(repo, "main.go"), []byte("package main\nthis does not compile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := testserver.Git(t, repo, "status", "--porcelain")
	ctx := context.Background()
	fc := filepath.Join(root, ".cache", "faultbuild")
	tool, err := faultbuild.Toolexec(ctx, fc, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := BuildOptions{Dir: repo, CacheDir: t.TempDir(), FaultCache: fc, Toolexec: tool}
	var base, head Built
	for i, want := range []bool{false, true} {
		began := time.Now()
		if base, err = BuildRevision(ctx, "HEAD~1", o); err != nil {
			t.Fatal(err)
		}
		if head, err = BuildRevision(ctx, "main", o); err != nil {
			t.Fatal(err)
		}
		t.Logf("diff %d: both revisions ready in %v", i+1, time.Since(began).Round(time.Millisecond))
		if base.Cached != want || head.Cached != want {
			t.Errorf("diff %d: cached %v and %v, want %v", i+1, base.Cached, head.Cached, want)
		}
	}
	if base.Binary == head.Binary || base.Tree == head.Tree {
		t.Errorf("both revisions built into %s (tree %s)", base.Binary, base.Tree)
	}
	for _, b := range []Built{base, head} {
		if st, err := os.Stat(b.Binary); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s: not an executable (%v)", b.Binary, err)
		}
	}
	if got := testserver.Git(t, repo, "status", "--porcelain"); got != status {
		t.Errorf("the work tree changed: %q, was %q", got, status)
	}
	if got := testserver.Git(t, repo, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Errorf("a work tree was added: %s", got)
	}

	_, err = BuildRevision(ctx, "no-such-branch", o)
	if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), `unknown revision "no-such-branch"`) {
		t.Errorf("unknown revision: exit %d, %v", exitcode.Of(err), err)
	}
	// A commit that does not compile: the compiler's words, with the
	// file as the module names it.
	testserver.Git(t, repo, "commit", "-q", "-am", "broken")
	_, err = BuildRevision(ctx, "HEAD", o)
	if exitcode.Of(err) != exitcode.Infra || !strings.Contains(err.Error(), "does not build") || !strings.Contains(err.Error(), "main.go:2:1") {
		t.Errorf("broken revision: exit %d, %v", exitcode.Of(err), err)
	}
	if strings.Contains(err.Error(), o.CacheDir) {
		t.Errorf("the error names the build's temporary directory: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(o.CacheDir, "diff"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "src-") {
			t.Errorf("the exported tree %s was left behind", e.Name())
		}
	}
}

func TestUnmatchedGate(t *testing.T) {
	res := &diff.Result{Figures: []diff.Figure{{Key: diff.Key{Name: "p99"}}, {Key: diff.Key{Name: "bill.failed"}}}}
	for gates, want := range map[string]string{"p99": "", "bill.*": "", "p99,p999": "p999", "*": ""} {
		if got := unmatchedGate(res, strings.Split(gates, ",")); got != want {
			t.Errorf("gates %s: %q, want %q", gates, got, want)
		}
	}
}
