package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests rebuild, on the fixture service, the runs in which a verdict
// said more than its evidence showed.

// taggedScenario sends creates (tagged) and reads to the fixture, which
// leaves every hangEvery-th create unanswered, and judges the creates
// twice: by tag and by method and path.
const taggedScenario = `name: tagged
target:
  command:
    argv: [%s, --listen, "127.0.0.1:{port}", --create-hang-every, "%d"]
  url: http://127.0.0.1:{port}
  points: [%s/itemQuery]
load:
  rate: 60/s
  timeout: 300ms
  requests:
    - {method: POST, path: /items, body: "{}", tags: [create]}
    - {path: "/items/{1..20}", tags: [read]}
phases:
  - name: only
    duration: 2s
contracts:
  - name: by tag
    phase: only
    requests: {tag: create}
    min_samples: 20
    expect: [status == 201 for >= 99%%]
  - name: by route
    phase: only
    requests: {method: POST, path: /items}
    min_samples: 20
    expect: [status == 201 for >= 99%%]
`

// A request that got no response keeps its tags: with every create
// timing out, {tag: create} fails on all of them, not "inconclusive: 0
// requests"; with one in four timing out, it measures what {method, path}
// measures on the same window.
func TestTaggedRequestsWithoutResponse(t *testing.T) {
	bin := chaoskitBin(t)
	fixture := fixtureBin(t)
	t.Parallel()
	for _, every := range []int{1, 4} {
		t.Run(fmt.Sprintf("every %d-th create hangs", every), func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			res := runBin(t, bin, "run", writeFile(t, dir, "s.yaml", fmt.Sprintf(taggedScenario, fixture, every, fixturePkg)), "--report-dir", out)
			if res.code != 1 {
				t.Fatalf("exit %d, want 1 (a contract failed)\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			cs := readReport(t, out).Scenarios[0].Contracts
			byTag, byRoute := cs[0], cs[1]
			if byTag.Verdict != "fail" || byRoute.Verdict != "fail" {
				t.Fatalf("verdicts %s and %s, want fail and fail\n%s", byTag.Verdict, byRoute.Verdict, res.stdout)
			}
			if byTag.Measured != byRoute.Measured {
				t.Errorf("by tag measured %q, by method and path %q: the same requests\n%s", byTag.Measured, byRoute.Measured, res.stdout)
			}
			if every == 1 && !strings.HasPrefix(byTag.Measured, "0%") {
				t.Errorf("by tag measured %q, want 0%% (no create answered)\n%s", byTag.Measured, res.stdout)
			}
			t.Logf("%d: by tag %s, by route %s\n%s", every, byTag.Measured, byRoute.Measured, res.stdout)
		})
	}
}

// chaoskit stopped (SIGSTOP) for 1.5 s, 2 s into a 10 s phase at 100/s:
// 43 % short of the plan by then, 15 % of the phase's plan. The verdict
// is inconclusive: the stall is measured against the plan by its moment.
func TestStallIsMeasuredByItsMoment(t *testing.T) {
	bin := chaoskitBin(t)
	fixtureBin(t)
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cmd, buf := startChaoskit(t, bin, writeFile(t, dir, "s.yaml", scenarioFor(t, "fixture", "100/s", 10*time.Second)), out, "honest", phaseStarted("only"))
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, buf); code != 1 {
		t.Fatalf("exit %d, want 1 (inconclusive)\n%s", code, buf)
	}
	if c := readReport(t, out).Scenarios[0].Contracts[0]; c.Verdict != "inconclusive" || !strings.Contains(buf.String(), `into phase "only" it had sent`) {
		t.Errorf("contract %+v\n%s", c, buf)
	}
	t.Logf("%s", buf)
}
