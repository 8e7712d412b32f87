package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/exitcode"
)

// TestInitBaselineThenRun is chaoskit init's acceptance on its two
// fixture services (net/http + database/sql on PostgreSQL; chi + go-redis):
// init --baseline, then run on what it wrote with no edit. Every proposed
// contract passes on the service; its broken variant (built with -tags
// nofallback into the same path) fails at least one.
func TestInitBaselineThenRun(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	for _, name := range []string{"visits", "catalog"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			dir := t.TempDir()
			src := filepath.Join(repoRoot(t), "testdata", "init", name)
			scenario := filepath.Join(dir, name+".yaml")
			r := runBin(t, bin, "init", "-C", src, "--baseline", "--phase", "2s", "--output-file", scenario, "--report-dir", filepath.Join(dir, "init"))
			if r.code != 0 {
				t.Fatalf("init exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			text, err := os.ReadFile(scenario)
			if err != nil {
				t.Fatal(err)
			}
			proposed := strings.Count(string(text), "(proposed)\"")
			if proposed < 10 {
				t.Fatalf("%d contracts proposed, want one per route and fault at least:\n%s", proposed, text)
			}

			r = runBin(t, bin, "run", scenario, "--report-dir", filepath.Join(dir, "run"), "-o", "json", "--format", "json")
			rep := decodeReport(t, r)
			passed, failed := tally(rep)
			t.Logf("%s: %d proposed, %d passed on the service", name, proposed, passed)
			if r.code != 0 || passed != proposed || failed != 0 {
				t.Fatalf("run exit %d: %d of %d proposed contracts passed%s\n%s", r.code, passed, proposed, notPassed(rep), r.stderr)
			}

			build := exec.Command("go", "build", "-tags", "nofallback", "-o", filepath.Join(dir, "bin", name), ".")
			build.Dir = src
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building the broken variant: %v\n%s", err, out)
			}
			r = runBin(t, bin, "run", scenario, "--report-dir", filepath.Join(dir, "broken"), "-o", "json", "--format", "json")
			rep = decodeReport(t, r)
			_, failed = tally(rep)
			t.Logf("%s: the broken variant fails %d of %d (init, run and broken run in %s)", name, failed, proposed, time.Since(start).Round(time.Second))
			if r.code != 1 || failed == 0 {
				t.Fatalf("broken variant: exit %d, %d contracts failed; want exit 1 and at least one failure\n%s", r.code, failed, r.stderr)
			}
		})
	}
}

func decodeReport(t *testing.T, r result) reportJSON {
	t.Helper()
	var rep reportJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report on stdout: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	return rep
}

// notPassed lists the contracts that did not pass, with what they
// measured against what they expected.
func notPassed(rep reportJSON) string {
	var b strings.Builder
	for _, sc := range rep.Scenarios {
		for _, c := range sc.Contracts {
			if c.Verdict != "pass" {
				fmt.Fprintf(&b, "\n  %s: %s in %s, measured %s, expected %s", c.Verdict, c.Name, c.Phase, c.Measured, c.Expected)
			}
		}
	}
	return b.String()
}

func tally(rep reportJSON) (passed, failed int) {
	for _, sc := range rep.Scenarios {
		for _, c := range sc.Contracts {
			switch c.Verdict {
			case "pass":
				passed++
			case "fail":
				failed++
			}
		}
	}
	return passed, failed
}

// TestInitWritesAScenarioThatLoads runs init in process on the visits
// fixture without building or running it: the scenario it writes loads,
// and a second init refuses to overwrite it (exit 2) unless --force.
func TestInitWritesAScenarioThatLoads(t *testing.T) {
	src := filepath.Join(repoRoot(t), "testdata", "init", "visits")
	out := filepath.Join(t.TempDir(), "visits.yaml")
	initCmd := func(args ...string) (string, error) {
		root := newRoot()
		var stdout bytes.Buffer
		root.SetOut(&stdout)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"init", "-C", src, "--no-build", "--output-file", out}, args...))
		err := execute(context.Background(), root)
		return stdout.String(), err
	}
	if stdout, err := initCmd(); err != nil || !strings.Contains(stdout, "next: chaoskit run "+out) {
		t.Fatalf("init: %v, stdout %q", err, stdout)
	}
	if _, err := harness.Load([]string{out}, false, harness.LoadOptions(nil, 1, nil)); err != nil {
		t.Fatalf("the scenario init wrote does not load: %v", err)
	}
	text, _ := os.ReadFile(out)
	for _, want := range []string{`"--dsn", "postgres://postgres@127.0.0.1:{port:postgres-proxy}/postgres?sslmode=disable"`,
		"- {proxy: postgres-proxy, action: down}", "main.go:57: POST /items is not in the load", `items_id: "1"`} {
		if !strings.Contains(string(text), want) {
			t.Errorf("scenario lacks %q:\n%s", want, text)
		}
	}
	if _, err := initCmd(); exitcode.Of(err) != exitcode.Invalid || !strings.Contains(fmt.Sprint(err), "init does not overwrite") {
		t.Errorf("second init: %v (exit %d), want exit 2", err, exitcode.Of(err))
	}
	if _, err := initCmd("--force"); err != nil {
		t.Errorf("init --force: %v", err)
	}
}
