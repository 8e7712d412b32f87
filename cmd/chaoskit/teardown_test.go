package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestTeardownTruncatesWhatSetupSeeded runs the demo beside a managed
// Postgres: the setup seeds a table and counts it, the teardown truncates
// it, counts it again and hands both counts to a program of the
// scenario's directory, which writes them where the test reads them. The run passes, every teardown step is
// on the timeline after the last phase with its duration, and the table
// was seen empty before Postgres was stopped. A teardown step that fails
// gives exit 3 with its output, the steps after it still run and the
// contracts are still reported.
func TestTeardownTruncatesWhatSetupSeeded(t *testing.T) {
	bin := chaoskitBin(t)
	requireServers(t)
	t.Parallel()
	dir := t.TempDir()
	scenario := `name: teardown
target:
  demo:
    args: []
dependencies:
  - name: db
    postgres: {}
setup:
  - name: seed
    postgres: db
    sql: |
      CREATE TABLE items (id int PRIMARY KEY);
      INSERT INTO items SELECT generate_series(1, 3);
      SELECT count(*) AS n FROM items;
    capture: {seeded: "{row.n}"}
teardown:
  - {name: truncate, postgres: db, sql: TRUNCATE items}
  - {name: count, postgres: db, sql: "SELECT count(*) AS n FROM items", capture: {left: "{row.n}"}}
  - name: check
    run: [./check.sh]
    env: {SEEDED: "{capture.seeded}", LEFT: "{capture.left}", OUT: counts}
load:
  rate: 20/s
  requests: [{path: /products/1}]
phases:
  - name: p
    duration: 500ms
contracts:
  - name: answers
    phase: p
    min_samples: 5
    expect: [primary >= 50%]
`
	file := writeFile(t, dir, "teardown.yaml", scenario)
	check := writeFile(t, dir, "check.sh", "#!/bin/sh\necho \"seeded $SEEDED, left $LEFT\" > $OUT\n")
	if err := os.Chmod(check, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", file, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "counts"))
	if err != nil {
		t.Fatalf("the check step wrote nothing: %v\n%s", err, res.stdout)
	}
	if got := string(data); got != "seeded 3, left 0\n" {
		t.Errorf("counts %q, want 3 rows seeded and none left after the truncation", got)
	}
	tl := readTimeline(t, filepath.Join(out, "teardown"))
	assertNoOrphans(t, tl)
	var seen []string
	lastPhase := false
	for _, e := range tl.Events {
		switch e.Kind {
		case timeline.PhaseEnd:
			lastPhase = true
		case timeline.Teardown:
			if !lastPhase {
				t.Errorf("teardown step %q ran before the last phase ended", e.Message)
			}
			if d, _ := timeline.Number(e.Data["duration_ns"]); d <= 0 || e.Data["error"] != nil {
				t.Errorf("teardown step %q: %v, want a duration and no error", e.Message, e.Data)
			}
			seen = append(seen, e.Message)
		}
	}
	if strings.Join(seen, ", ") != "truncate, count, check" {
		t.Errorf("teardown events %q, want the three steps in order", seen)
	}

	writeFile(t, dir, "check.sh", "#!/bin/sh\necho no good >&2\nexit 2\n")
	broken := filepath.Join(dir, "out-broken")
	res = runBin(t, bin, "run", file, "--report-dir", broken)
	if res.code != 3 || !strings.Contains(res.stderr+res.stdout, `teardown step "check" failed`) || !strings.Contains(res.stderr+res.stdout, "no good") {
		t.Fatalf("a failing teardown step: exit %d, want 3 with its output\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if c := readReport(t, broken).Scenarios[0].Contracts; len(c) != 1 || c[0].Verdict != "pass" {
		t.Errorf("contracts after a failing teardown %+v, want the one contract reported, passed", c)
	}
}
