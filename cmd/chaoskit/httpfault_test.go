package main

import (
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/timeline"
)

// buildHTTPFaultCase builds the truth corpus's http-grpc-faults service and
// its two dependencies into dir.
func buildHTTPFaultCase(t *testing.T, dir string) {
	t.Helper()
	build := exec.Command("go", "build", "-o", dir+"/", "./testdata/truth/_prices", "./testdata/truth/_stock", "./testdata/truth/http-grpc-faults")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// faultShares counts what the faults of the HTTP and gRPC proxies did to
// the requests they matched, per phase and fault path.
func faultShares(tl *timeline.Timeline) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, e := range tl.Events {
		if e.Kind != timeline.FaultRequest {
			continue
		}
		k := e.Phase + " " + e.Point
		if out[k] == nil {
			out[k] = map[string]int{}
		}
		done, _ := e.Data["done"].(string)
		out[k][done]++
	}
	return out
}

// TestHTTPAndGRPCProxyFaultShares runs the truth case http-grpc-faults at
// 700 requests a second: an HTTP proxy aborts 50 % of GET /price/* with
// 503 and a gRPC proxy 30 % of truth.Stock/Get with UNAVAILABLE, over at
// least 2,000 calls to each unmodified dependency; the shares the proxies
// record are within 5 points of those asked, the hits of each fault agree
// with its requests, and tenant a stays primary while tenant b's prices
// fail.
func TestHTTPAndGRPCProxyFaultShares(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	buildHTTPFaultCase(t, dir)
	out := filepath.Join(dir, "out")
	scenario := filepath.Join(repoRoot(t), "testdata", "truth", "http-grpc-faults", "scenario.yaml")
	res := runBin(t, bin, "run", scenario, "--var", "bin="+dir, "--var", "rate=700/s", "--var", "outage=4s", "--report-dir", out)
	if res.code != 0 && res.code != 1 {
		t.Fatalf("exit %d, want 0 (or 1, a contract the machine's load failed: see below)\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	tl := readTimeline(t, filepath.Join(out, "http-grpc-faults"))
	shares := faultShares(tl)
	for _, tt := range []struct {
		key, action string
		want        float64
	}{
		{"outage proxy/prices", "abort 503", 0.5},
		{"outage proxy/stock", "abort UNAVAILABLE", 0.3},
		{"tenant-b-outage proxy/prices", "abort 503", 1},
	} {
		counts := shares[tt.key]
		n := 0
		for _, c := range counts {
			n += c
		}
		share := float64(counts[tt.action]) / float64(n)
		t.Logf("%s: %d of %d requests %s (%.2f%%), asked %.0f%%", tt.key, counts[tt.action], n, tt.action, share*100, tt.want*100)
		if tt.want < 1 && n < 2000 {
			t.Errorf("%s: %d requests matched, fewer than the 2000 the share needs", tt.key, n)
		}
		if math.Abs(share-tt.want) > 0.05 || n == 0 {
			t.Errorf("%s: %s for %.2f%% of %d requests, want %.0f%% ± 5", tt.key, tt.action, share*100, n, tt.want*100)
		}
		if len(counts) != 2 && tt.want < 1 {
			t.Errorf("%s: recorded %v, want %q and passed only", tt.key, counts, tt.action)
		}
	}
	// The fault_hits of each fault give the same counts.
	for _, e := range tl.Events {
		if e.Kind != timeline.FaultHits {
			continue
		}
		counts := shares[e.Phase+" "+e.Point]
		matched, _ := e.Data["matched"].(float64)
		if e.Hits == nil || int(*e.Hits) != counts[acted(counts)] || int(matched) != counts[acted(counts)]+counts["passed"] {
			t.Errorf("%s %s: fault_hits %v of %v, its requests %v", e.Phase, e.Point, e.Hits, e.Data["matched"], counts)
		}
	}
	// The verdicts of the per-tenant contracts; the others are the truth
	// case's at its own rate (make truth), not this test's at 700/s.
	rep := readReport(t, out)
	judged := 0
	for _, c := range rep.Scenarios[0].Contracts {
		if !strings.HasPrefix(c.Name, "tenant ") {
			t.Logf("%s: %s (measured %s, expected %s)", c.Name, c.Verdict, c.Measured, c.Expected)
			continue
		}
		judged++
		if c.Verdict != "pass" {
			t.Errorf("%s: %s (measured %s, expected %s)", c.Name, c.Verdict, c.Measured, c.Expected)
		}
	}
	if judged != 2 {
		t.Errorf("%d tenant contracts in the report, want 2", judged)
	}
}

// acted is what a fault did to the requests it acted on.
func acted(counts map[string]int) string {
	for k := range counts {
		if k != "passed" {
			return k
		}
	}
	return ""
}

// TestHTTPProxyFaultRolledBackOnInterrupt interrupts a run while the HTTP
// and gRPC proxies' faults are on and acting: chaoskit exits 130 and the
// timeline says both were switched off by the rollback.
func TestHTTPProxyFaultRolledBackOnInterrupt(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	buildHTTPFaultCase(t, dir)
	src := string(mustRead(t, filepath.Join(repoRoot(t), "testdata", "truth", "http-grpc-faults", "scenario.yaml")))
	sc := strings.NewReplacer("bin: ../../../out/truth/bin", "bin: "+dir, "outage: 2s", "outage: 30s").Replace(src)
	scenario := writeFile(t, dir, "s.yaml", sc)
	out := filepath.Join(dir, "out")
	cmd, buf := startChaoskit(t, bin, scenario, out, "http-grpc-faults", func(e timeline.Event) bool {
		return e.Kind == timeline.FaultRequest && e.Point == "proxy/stock"
	})
	interrupt(t, cmd, buf)
	tl := readTimeline(t, filepath.Join(out, "http-grpc-faults"))
	off := map[string]string{}
	for _, e := range tl.Events {
		if e.Kind == timeline.FaultOff {
			off[e.Point] = e.Message
		}
	}
	for _, p := range []string{"proxy/prices", "proxy/stock"} {
		if off[p] != "rolled back" {
			t.Errorf("%s: fault_off %q, want one rolled back (%v)", p, off[p], off)
		}
	}
}

// httpFaultSpace is the fault space and invariants that replace the truth
// case's phases and contracts for explore.
const httpFaultSpace = `fuzz:
  warmup: 1s
  recovery: 1s
  duration: 1s
  phases: 1
  faults:
    - proxy: prices
      actions: [abort]
      match: {headers: {X-Tenant: b}}
    - proxy: stock
      actions: [abort]
      match: {grpc_method: truth.Stock/Get, headers: {x-tenant: b}}
contracts:
  - name: tenant a stays primary
    requests: {tag: tenant-a}
    expect: [primary >= 100%]
  - name: every quote answers
    expect: ['status == 200 for >= 99%']
`

// TestExploreHTTPProxyFaults explores a fault space of the truth case's
// HTTP and gRPC proxies, each faulting tenant b only: every single fault
// and the pair run, tenant a stays primary throughout, and the service
// that does not fall back breaks the invariant that every quote answers,
// which explore reports (exit 1).
func TestExploreHTTPProxyFaults(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	buildHTTPFaultCase(t, dir)
	src := string(mustRead(t, httpFaultScenario))
	text := strings.Replace(src[:strings.Index(src, "phases:")], "bin: ../../../out/truth/bin", "bin: "+dir, 1) + httpFaultSpace
	correct := writeFile(t, dir, "correct.yaml", text)
	res := runBin(t, bin, "explore", correct, "--report-dir", filepath.Join(dir, "correct"))
	if res.code != 0 || !strings.Contains(res.stdout, "2 single faults and 1 pairs") {
		t.Errorf("explore of the correct service: exit %d, want 0 after 2 singles and a pair\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	broken := writeFile(t, dir, "broken.yaml", strings.Replace(text, "variant: correct", "variant: broken", 1))
	res = runBin(t, bin, "explore", broken, "--report-dir", filepath.Join(dir, "broken"))
	if res.code != 1 || !strings.Contains(res.stdout, "I2  every quote answers") {
		t.Errorf("explore of the broken service: exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	// Each faulted row of the table: I1 (tenant a) held, I2 broken.
	rows := 0
	for _, line := range strings.Split(res.stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "proxy/") {
			rows++
			if !strings.Contains(line, "  pass  FAIL  ") {
				t.Errorf("explore of the broken service: row %q, want tenant a's invariant held and the answers' broken", line)
			}
		}
	}
	if rows != 3 {
		t.Errorf("explore of the broken service: %d faulted rows, want 3\n%s", rows, res.stdout)
	}
}
