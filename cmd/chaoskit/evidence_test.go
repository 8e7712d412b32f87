package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unreachedScenario switches on a fault in the recommendations call while
// the load only reads products: the build is live, and no request takes
// the code path of the marker.
const unreachedScenario = `name: unreached-marker
target:
  demo:
    args: []
load:
  rate: 100/s
  timeout: 1s
  requests:
    - method: GET
      path: /products/{1..50}
phases:
  - name: warmup
    duration: 1s
  - name: recommendations-errors
    duration: 1s
    faults:
      - point: recommendationsCall
        action: error
contracts:
  - name: reads stay up
    phase: recommendations-errors
    expect:
      - status == 200 for >= 99%
`

// TestUnfiredMarkerOnALiveBuildSaysThePathWasNotTaken checks the evidence
// of a fault that never fired on a fault-injection build: the timeline
// records that the target's markers are live, and the verdict says that no
// request reached the marker, not that the build may be a plain one.
func TestUnfiredMarkerOnALiveBuildSaysThePathWasNotTaken(t *testing.T) {
	t.Parallel()
	bin := chaoskitBin(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "unreached.yaml", unreachedScenario)
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", file, "--report-dir", out)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (inconclusive)\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if tl := readTimeline(t, filepath.Join(out, "unreached-marker")); tl.Meta.FaultInjection == nil || !*tl.Meta.FaultInjection {
		t.Errorf("timeline meta fault_injection = %v, want true (a live build)", tl.Meta.FaultInjection)
	}
	var rep struct {
		Scenarios []struct {
			Contracts []struct {
				Verdict string `json:"verdict"`
				Reason  string `json:"reason"`
			} `json:"contracts"`
		} `json:"scenarios"`
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	c := rep.Scenarios[0].Contracts[0]
	if c.Verdict != "inconclusive" || !strings.Contains(c.Reason, "recommendationsCall was on in phase \"recommendations-errors\" but its marker never fired") ||
		!strings.Contains(c.Reason, "the build is live") || !strings.Contains(c.Reason, "the code path was not taken") || strings.Contains(c.Reason, "without failpoint rewriting") {
		t.Errorf("contract %s: %q", c.Verdict, c.Reason)
	}
	if !strings.Contains(res.stdout+res.stderr, "no request reached the marker") {
		t.Errorf("the output does not give the reason:\n%s\n%s", res.stdout, res.stderr)
	}
}
