package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestDocsRecipeServiceOnPostgresAndRedis is issue 27's first acceptance
// line: the recipe of docs/scenarios.md, taken from the page as it is,
// seeds testdata/linkservice's Postgres from its migrations folder, sets
// a Redis key, logs in for a token, writes with it and reads every write
// back with it, and passes; the broken variant (acknowledged before
// written) fails the read-back; a migration that fails stops the run with
// exit 3 naming the SQL file's line and column, and leaves nothing
// running.
func TestDocsRecipeServiceOnPostgresAndRedis(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	t.Parallel()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "linkservice"), "./testdata/linkservice")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/linkservice: %v\n%s", err, out)
	}
	mig := filepath.Join(dir, "migrations")
	if err := os.Mkdir(mig, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(repoRoot(t), "testdata", "linkservice", "migrations")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, mig, e.Name(), string(data))
	}
	scenario := writeFile(t, dir, "links.yaml", docsScenario(t, "links-on-postgres-and-redis"))

	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", scenario, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	tl := readTimeline(t, filepath.Join(out, "links-on-postgres-and-redis"))
	assertNoOrphans(t, tl)
	var steps []string
	for _, e := range tl.Events {
		if e.Kind == timeline.Setup {
			steps = append(steps, e.Message)
			if d, _ := timeline.Number(e.Data["duration_ns"]); d <= 0 {
				t.Errorf("setup step %q has no duration on the timeline: %v", e.Message, e.Data)
			}
		}
	}
	if strings.Join(steps, ", ") != "migrations, base url, login" {
		t.Errorf("setup events %q, want the three steps in order", steps)
	}
	for _, c := range readReport(t, out).Scenarios[0].Contracts {
		t.Logf("%s: %s (measured %s)", c.Verdict, c.Name, c.Measured)
	}
	if last := tl.Events; len(steps) == 3 {
		for _, e := range last {
			if e.Kind == timeline.Setup && e.Message == "login" && e.Data["captured"] == nil {
				t.Errorf("the login step names no capture: %v", e.Data)
			}
		}
	}

	broken := filepath.Join(dir, "out-broken")
	res = runBin(t, bin, "run", scenario, "--var", "broken=true", "--report-dir", broken)
	if res.code != 1 {
		t.Fatalf("broken variant: exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, c := range readReport(t, broken).Scenarios[0].Contracts {
		if c.Name == "no acknowledged link is lost" && c.Verdict != "fail" {
			t.Errorf("broken variant: %q is %s (measured %s), want fail", c.Name, c.Verdict, c.Measured)
		}
	}

	writeFile(t, mig, "003_more.sql", "-- a typo on line 4\nINSERT INTO users (name, password)\n  VALUES ('other', 'x');\nSELEC 1;\n")
	bad := filepath.Join(dir, "out-bad")
	res = runBin(t, bin, "run", scenario, "--report-dir", bad)
	want := `setup step "migrations" failed: ` + filepath.Join(mig, "003_more.sql") + `:4:1: ERROR: syntax error at or near "SELEC"`
	if res.code != 3 || !strings.Contains(res.stderr, want) {
		t.Fatalf("a failing migration: exit %d, want 3 and %q\n%s\n%s", res.code, want, res.stdout, res.stderr)
	}
	tl = readTimeline(t, filepath.Join(bad, "links-on-postgres-and-redis"))
	assertNoOrphans(t, tl)
	for _, e := range tl.Events {
		if e.Kind == timeline.PhaseStart {
			t.Errorf("a failed setup step went on to phase %s", e.Phase)
		}
	}
}
