package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// startDemo starts the demo service on loopback with its failpoint
// control endpoint, for runs that share one target, and returns its
// address and the endpoint's.
func startDemo(t *testing.T, bin string) (addr, ctrl string) {
	t.Helper()
	ctrl = freeAddr(t)
	demo := exec.Command(bin, "demo", "serve", "--listen", "127.0.0.1:0")
	demo.Env = append(os.Environ(), "GO_FAILPOINTS_HTTP="+ctrl)
	stdout, _ := demo.StdoutPipe()
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { demo.Process.Kill(); demo.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on ")), ctrl
}

// phaseRequests reads run.json's requests per phase.
func phaseRequests(t *testing.T, runDir string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Phases []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range sum.Phases {
		out[p.Name] = p.Requests
	}
	return out
}

// TestShardsMergeToOneRun runs a scenario once whole and once as three
// shard processes (shard 1 switching the fault) against one demo service,
// merges the shards, and finds the verdicts and the request counts of the
// whole run.
func TestShardsMergeToOneRun(t *testing.T) {
	bin := chaoskitBin(t)
	addr, ctrl := startDemo(t, bin)
	src, err := os.ReadFile(scenarioFile)
	if err != nil {
		t.Fatal(err)
	}
	sc := strings.Replace(string(src), "  demo:\n    args: [\"--db-timeout=${db_timeout}\"]", fmt.Sprintf("  url: http://%s\n  failpoints: http://%s\n  points: [github.com/chaoskit/chaoskit/demo/store/productQuery]", addr, ctrl), 1)
	dir := t.TempDir()
	file := writeFile(t, dir, "s.yaml", sc)
	const name = "db-timeout-serves-cache"

	whole := filepath.Join(dir, "whole")
	if res := runBin(t, bin, "run", file, "--report-dir", whole); res.code != 0 {
		t.Fatalf("whole run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}

	// The shards start together, as a CI matrix's jobs would with one
	// --start-at.
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	results := make([]result, 3)
	for i := range 3 {
		wg.Go(func() {
			results[i] = runBin(t, bin, "run", file, "--shard", fmt.Sprintf("%d/3", i+1), "--start-at", start,
				"--report-dir", filepath.Join(dir, fmt.Sprintf("shard-%d", i+1)))
		})
	}
	wg.Wait()
	var shards []string
	for i, res := range results {
		if res.code != 0 {
			t.Fatalf("shard %d/3: exit %d\n%s\n%s", i+1, res.code, res.stdout, res.stderr)
		}
		shards = append(shards, filepath.Join(dir, fmt.Sprintf("shard-%d", i+1), name))
	}
	merged := filepath.Join(dir, "merged")
	res := runBin(t, bin, append(append([]string{"report", "--merge"}, shards...), "--report-dir", merged, "--format", "json")...)
	if res.code != 0 {
		t.Fatalf("report --merge: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}

	want, got := readReport(t, whole), readReport(t, merged)
	if len(got.Scenarios) != 1 || len(got.Scenarios[0].Contracts) != len(want.Scenarios[0].Contracts) {
		t.Fatalf("merged report %+v, whole %+v", got, want)
	}
	for i, c := range want.Scenarios[0].Contracts {
		if g := got.Scenarios[0].Contracts[i]; g.Verdict != c.Verdict || g.Verdict != "pass" {
			t.Errorf("contract %q: merged %s (%s), whole %s (%s)", c.Name, g.Verdict, g.Measured, c.Verdict, c.Measured)
		}
	}
	wantN := phaseRequests(t, filepath.Join(whole, name))
	sumN := map[string]int{}
	for _, s := range shards {
		for p, n := range phaseRequests(t, s) {
			sumN[p] += n
		}
	}
	// The same plan, split: the counts agree but for the request whose
	// due time falls on a phase's edge, which a run's pacer may send just
	// before or just after it (a machine busy at that moment decides).
	for p, n := range wantN {
		if d := sumN[p] - n; d < -2 || d > 2 {
			t.Errorf("phase %s: the shards sent %d requests in all, the whole run %d", p, sumN[p], n)
		}
	}
	// Only shard 1 switched the fault.
	for i, s := range shards[1:] {
		if tl := readTimeline(t, s); len(tl.Requests) == 0 || hasFaultOn(tl.Events) {
			t.Errorf("shard %d/3: %d requests, switched a fault: %v", i+2, len(tl.Requests), hasFaultOn(tl.Events))
		}
	}
}

func hasFaultOn(events []timeline.Event) bool {
	for _, e := range events {
		if e.Kind == timeline.FaultOn {
			return true
		}
	}
	return false
}
