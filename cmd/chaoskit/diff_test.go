package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/testserver"
)

// diffScenario is the demo's DB-timeout scenario with short phases: the
// fewest seconds that still show a fallback served, or not.
const diffScenario = `name: db-timeout-short
target:
  demo:
    args: []
load:
  rate: 200/s
  timeout: 1s
  requests:
    - path: /products/{1..50}
phases:
  - name: warmup
    duration: 1s
  - name: db-timeout
    duration: 2s
    faults:
      - point: store/productQuery
        action: timeout
  - name: recovery
    duration: 1s
contracts:
  - name: on DB timeout return cached data
    phase: db-timeout
    settle: 500ms
    expect:
      - header("X-Chaoskit-Source") == "cache" for >= 99%
`

// breakerScenario fails the database for a while and watches the db
// breaker close again after it.
const breakerScenario = `name: db-errors-breaker-short
target:
  demo:
    args: []
load:
  rate: 200/s
  timeout: 1s
  requests:
    - path: /products/{1..50}
phases:
  - name: warmup
    duration: 1s
  - name: db-errors
    duration: 1500ms
    faults:
      - point: store/productQuery
        action: error
  - name: recovery
    duration: 4s
contracts:
  - name: the breaker closes after the fault
    phase: recovery
    expect:
      - breaker("db") closes within 3500ms after fault
`

func TestDiffNoFallbackRegresses(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	sc := writeFile(t, dir, "db.yaml", diffScenario)
	out := filepath.Join(dir, "out")
	r := runBin(t, bin, "diff", sc, "--head-arg=--no-fallback", "--runs", "1", "--report-dir", out, "--format", "table,markdown")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a regression)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "diff.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"share.fallback", "regressed"} {
		if !strings.Contains(r.stdout, want) || !strings.Contains(string(md), want) {
			t.Errorf("the table and diff.md do not say %q\n%s\n%s", want, r.stdout, md)
		}
	}
	for _, run := range []string{"db-timeout-short-base-1", "db-timeout-short-head-1"} {
		if _, err := os.Stat(filepath.Join(out, run, "timeline.jsonl")); err != nil {
			t.Errorf("run directory %s: %v", run, err)
		}
	}
}

// TestDiffSlowerBreakerRegresses: a breaker that stays open three times
// longer (3 s, not the demo's 1 s) passes the contract on both sides, and
// the diff still says the head recovers later.
func TestDiffSlowerBreakerRegresses(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	sc := writeFile(t, dir, "breaker.yaml", breakerScenario)
	policies := writeFile(t, dir, "policies.yaml", "breakers:\n  db:\n    open_duration: 3s\n")
	r := runBin(t, bin, "diff", sc, "--head-arg=--policies="+policies, "--runs", "1", "--report-dir", filepath.Join(dir, "out"), "--format", "table")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a regression)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !regressedLine(r.stdout, "breaker.db.open") && !regressedLine(r.stdout, "recover") {
		t.Errorf("no regression of the breaker's time open or of the recovery:\n%s", r.stdout)
	}
}

// regressedLine says whether a line of the table names figure and the
// word regressed.
func regressedLine(table, figure string) bool {
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, figure) && strings.HasSuffix(strings.TrimSpace(line), "regressed") {
			return true
		}
	}
	return false
}

// TestDiffRevisions diffs two commits of the diff fixture by revision:
// the second slows its fallback by 40 ms, which the head's p99 under the
// store's outage shows. A second diff reuses both builds.
func TestDiffRevisions(t *testing.T) {
	bin := chaoskitBin(t)
	root := repoRoot(t)
	repo := testserver.DiffRepo(t, root)
	cache := filepath.Join(root, ".cache")
	var took []time.Duration
	for i, want := range []string{"building", "reused"} {
		began := time.Now()
		r := runBin(t, bin, "diff", filepath.Join(repo, "scenario.yaml"), "-C", repo, "--base", "HEAD~1", "--head", "HEAD",
			"--runs", "1", "--cache", cache, "--report-dir", filepath.Join(t.TempDir(), "out"), "--format", "table", "--gate", "*p99*")
		took = append(took, time.Since(began))
		if r.code != 1 {
			t.Fatalf("diff %d: exit %d, want 1\n%s\n%s", i+1, r.code, r.stdout, r.stderr)
		}
		if n := strings.Count(r.stdout, "HEAD~1: "+want) + strings.Count(r.stdout, "HEAD: "+want); n != 2 {
			t.Errorf("diff %d: %d revisions %s, want both\n%s", i+1, n, want, r.stdout)
		}
		if !regressedLine(r.stdout, "store-down · p99") {
			t.Errorf("diff %d: the p99 under the outage did not regress\n%s", i+1, r.stdout)
		}
	}
	t.Logf("first diff (two builds) %v, second (builds reused) %v", took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
	if status := testserver.Git(t, repo, "status", "--porcelain"); status != "" {
		t.Errorf("the work tree changed: %s", status)
	}
	r := runBin(t, bin, "diff", filepath.Join(repo, "scenario.yaml"), "-C", repo, "--base", "no-such-rev", "--cache", cache, "--report-dir", filepath.Join(t.TempDir(), "out"))
	if r.code != 2 || !strings.Contains(r.stderr, `unknown revision "no-such-rev"`) {
		t.Errorf("unknown revision: exit %d\n%s", r.code, r.stderr)
	}
}

// TestDiffSelfIsQuiet diffs the demo against itself CHAOSKIT_DIFF_NOISE
// times (default: not run; make diff-noise runs it 10 times) with the
// default 3 runs a side, and wants exit 0 every time: noise is no
// regression. CHAOSKIT_DIFF_BUSY=1 keeps one core busy meanwhile.
func TestDiffSelfIsQuiet(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHAOSKIT_DIFF_NOISE"))
	if n <= 0 {
		t.Skip("set CHAOSKIT_DIFF_NOISE=10 (make diff-noise)")
	}
	bin := chaoskitBin(t)
	if os.Getenv("CHAOSKIT_DIFF_BUSY") != "" {
		// One core busy in another process, as another job on a CI runner
		// would keep it.
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		busy := exec.Command("yes")
		busy.Stdout = null
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = busy.Process.Kill(); _ = busy.Wait() }()
	}
	dir := t.TempDir()
	sc := writeFile(t, dir, "db.yaml", diffScenario)
	quiet := 0
	for i := 1; i <= n; i++ {
		r := runBin(t, bin, "diff", sc, "--report-dir", filepath.Join(dir, fmt.Sprint("out", i)), "--format", "table")
		head := r.stdout
		if k := strings.Index(head, "diff: "); k >= 0 {
			head, _, _ = strings.Cut(head[k:], "\n")
		}
		t.Logf("try %d: exit %d, %s", i, r.code, head)
		if r.code == 0 {
			quiet++
		} else {
			t.Errorf("try %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	t.Logf("%d of %d self-diffs exited 0", quiet, n)
}

var (
	diffserviceOnce sync.Once
	diffservicePath string
	diffserviceErr  error
)

// diffserviceBin is a fault-injection build of testdata/diffservice, made
// once by chaoskit build.
func diffserviceBin(t *testing.T) string {
	t.Helper()
	bin := chaoskitBin(t)
	diffserviceOnce.Do(func() {
		root := repoRoot(t)
		diffservicePath = filepath.Join(root, ".cache", "e2e", "diffservice")
		args := []string{"build", "-C", filepath.Join(root, "testdata", "diffservice"), "--output-file", diffservicePath,
			"--cache", filepath.Join(root, ".cache", "faultbuild"), "."}
		if te := os.Getenv("CHAOSKIT_TOOLEXEC"); te != "" {
			args = append(args, "--toolexec", te)
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			diffserviceErr = fmt.Errorf("chaoskit build of the diff fixture: %v\n%s", err, out)
		}
	})
	if diffserviceErr != nil {
		t.Fatal(diffserviceErr)
	}
	return diffservicePath
}

// TestDiffCommands diffs two target commands of the diff fixture (not the
// demo): the scenario's own argv names a program that does not exist,
// and each side's command replaces it whole, {port} filled. The head
// without its fallback regresses (exit 1).
func TestDiffCommands(t *testing.T) {
	bin, svc := chaoskitBin(t), diffserviceBin(t)
	sc := filepath.Join(repoRoot(t), "testdata", "diffservice", "scenario.yaml")
	out := filepath.Join(t.TempDir(), "out")
	base := svc + " --listen 127.0.0.1:{port}"
	r := runBin(t, bin, "diff", sc, "--base-cmd", base, "--head-cmd", base+" --no-fallback",
		"--runs", "1", "--report-dir", out, "--format", "table")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (a regression)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, fig := range []string{"store-down · share.fallback", "bill.refused"} {
		if !regressedLine(r.stdout, fig) {
			t.Errorf("%s did not regress\n%s", fig, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "head (command "+base+" --no-fallback)") {
		t.Errorf("the progress does not name the head's command\n%s", r.stdout)
	}
	// The time to degrade: the base's fallback held from the fault's
	// start; the head gave no fallback answer, so its time is unknown,
	// with the reason, in the diff's bill and in the run's own report.
	if !strings.Contains(r.stdout, "    base  0/200 failed, 200 degraded") || !strings.Contains(r.stdout, " · degraded in ") ||
		!strings.Contains(r.stdout, "time to degrade unknown (none of the ") {
		t.Errorf("the diff's bills do not give the base's time to degrade and the head's as unknown\n%s", r.stdout)
	}
	for side, want := range map[string]string{"base": "; degraded in ", "head": "| – (none of the "} {
		review := filepath.Join(t.TempDir(), side)
		rr := runBin(t, bin, "report", filepath.Join(out, "store-down-falls-back-"+side+"-1"), "--report-dir", review, "--format", "table,markdown")
		md, err := os.ReadFile(filepath.Join(review, "report.md"))
		if err != nil {
			t.Fatalf("report of the %s run: exit %d: %v\n%s", side, rr.code, err, rr.stderr)
		}
		if got := rr.stdout + string(md); !strings.Contains(got, want) || !strings.Contains(string(md), "Degraded in") {
			t.Errorf("the %s run's report does not say %q\n%s\n%s", side, want, rr.stdout, md)
		}
	}
}

// TestDiffSameCommandIsQuiet diffs the diff fixture against itself, the
// same target command on both sides: no regression (exit 0). Its runs
// are interleaved: each run directory's recorded start comes after the
// previous one's in the order base 1, head 1, base 2, head 2.
func TestDiffSameCommandIsQuiet(t *testing.T) {
	bin, svc := chaoskitBin(t), diffserviceBin(t)
	sc := filepath.Join(repoRoot(t), "testdata", "diffservice", "scenario.yaml")
	out := filepath.Join(t.TempDir(), "out")
	cmd := svc + " --listen 127.0.0.1:{port}"
	r := runBin(t, bin, "diff", sc, "--base-cmd", cmd, "--head-cmd", cmd, "--runs", "2", "--report-dir", out, "--format", "table")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (the same command on both sides)\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "the same build") {
		t.Errorf("no note that base and head are the same\n%s", r.stdout)
	}
	var prev time.Time
	for _, run := range []string{"base-1", "head-1", "base-2", "head-2"} {
		start := readTimeline(t, filepath.Join(out, "store-down-falls-back-"+run)).Meta.Start
		if start.IsZero() || !start.After(prev) {
			t.Errorf("run %s started at %v, not after the run before it (%v): the runs are not interleaved base, head, base, head", run, start, prev)
		}
		prev = start
	}
}

// TestDiffCommandRefused: a target command that cannot be one is invalid
// input (exit 2), named, before anything runs.
func TestDiffCommandRefused(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	sc := filepath.Join(repoRoot(t), "testdata", "diffservice", "scenario.yaml")
	demo := writeFile(t, dir, "db.yaml", diffScenario)
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{sc, "--head-cmd", "bin/svc", "--head-binary", "/bin/true"}, "give a binary (--head-binary) or a command (--head-cmd), not both"},
		{[]string{sc, "--base-cmd", "bin/svc", "--base", "main"}, "give a revision (--base) or a command (--base-cmd), not both"},
		{[]string{sc, "--head-cmd", "bin/svc", "--head-arg=--slow"}, "write the argument in --head-cmd"},
		{[]string{sc, "--head-cmd", "bin/svc > log"}, "column 9"},
		{[]string{sc, "--head-cmd", "'bin/svc"}, "single quote"},
		{[]string{sc, "--head-cmd", " "}, "--head-cmd: the command is empty"},
		{[]string{sc, "--head-cmd", "./no/such/program --x"}, "--head-cmd ./no/such/program: not an executable file"},
		{[]string{sc, "--head-cmd", "no-such-program-anywhere"}, "no-such-program-anywhere is not in PATH"},
		{[]string{demo, "--head-cmd", "/bin/true"}, "the scenario's target is the demo"},
	} {
		r := runBin(t, bin, append([]string{"diff", "--report-dir", filepath.Join(dir, "out")}, tt.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.says) {
			t.Errorf("diff %q: exit %d, want 2 saying %q\n%s", tt.args, r.code, tt.says, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !os.IsNotExist(err) {
		t.Errorf("a refused diff left its report directory behind: %v", err)
	}
}
