package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// customHeadersScenario runs the fixture speaking as a service that knows
// nothing of chaoskit's headers: its source in X-Served-By (origin or
// edge-cache), and X-Cache: HIT on a fallback. %[1]s is the fixture binary,
// %[2]s its source directory.
const customHeadersScenario = `name: custom-headers
target:
  command:
    argv: [%[1]s, --listen, "127.0.0.1:{port}", --source-header, X-Served-By]
  url: http://127.0.0.1:{port}
  source: %[2]s
load:
  rate: 100/s
  timeout: 1s
  requests:
    - path: /items/{1..20}
phases:
  - name: warmup
    duration: 1s
  - name: store-down
    duration: 1500ms
    faults:
      - point: itemQuery
        action: error
classify:
  source_header: X-Served-By
  primary: [origin]
  rules:
    - class: fallback
      source: edge-cache-hit
      header: {X-Cache: HIT}
contracts:
  - name: the origin serves while the store is up
    phase: warmup
    expect:
      - primary >= 99%%
      - source == "origin" for >= 99%%
  - name: the edge cache serves while the store is down
    phase: store-down
    settle: 200ms
    expect:
      - fallback("edge-cache-hit") >= 99%%
      - header("X-Served-By") == "edge-cache" for >= 99%%
`

// Classification by a service's own headers: the run records the headers
// the scenario names (X-Served-By, X-Cache), the contracts classify by
// them, and the progress lines and run.json say the same as the contracts.
func TestClassifyByCustomHeaders(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, dir, "custom.yaml", fmt.Sprintf(customHeadersScenario, fixtureBin(t), filepath.Join(repoRoot(t), "testdata", "fixture")))
	res := runBin(t, bin, "run", file, "--report-dir", dir)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	rep := readReport(t, dir)
	for _, c := range rep.Scenarios[0].Contracts {
		if c.Verdict != "pass" {
			t.Errorf("contract %q: %s (%s)", c.Name, c.Verdict, c.Measured)
		}
	}
	// The progress line of the fault phase classifies as the contracts do.
	for _, line := range strings.Split(res.stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "store-down") && !strings.Contains(line, "fallback 100.0%") && !strings.Contains(line, "fallback  9") {
			t.Errorf("the store-down phase line does not say the fallback served: %s", line)
		}
		if strings.HasPrefix(strings.TrimSpace(line), "warmup") && !strings.Contains(line, "primary 100.0%") {
			t.Errorf("the warmup line does not say the primary served: %s", line)
		}
	}
	var run struct {
		Phases []struct {
			Name    string         `json:"name"`
			Classes map[string]int `json:"classes"`
		} `json:"phases"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "custom-headers", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Phases) != 2 || run.Phases[0].Classes["primary"] == 0 || run.Phases[0].Classes["fallback"] != 0 || run.Phases[1].Classes["fallback"] == 0 {
		t.Errorf("run.json classes: %+v", run.Phases)
	}
	tl := readTimeline(t, filepath.Join(dir, "custom-headers"))
	kept := 0
	for _, r := range tl.Requests {
		if r.Header("X-Served-By") != "" && r.Header("X-Cache") != "" {
			kept++
		}
	}
	if kept != len(tl.Requests) || kept == 0 {
		t.Errorf("%d of %d requests kept X-Served-By and X-Cache", kept, len(tl.Requests))
	}
}

// hiddenFaultScenario runs the fixture answering store failures 404
// {"errors":…}, as a REST service that hides its database errors behind a
// client-error status. %[1]s is the fixture binary, %[2]s its source.
const hiddenFaultScenario = `name: hidden-fault
target:
  command:
    argv: [%[1]s, --listen, "127.0.0.1:{port}", --errors-as-404]
  url: http://127.0.0.1:{port}
  source: %[2]s
load:
  rate: 100/s
  timeout: 1s
  requests:
    - path: /items/{1..20}
phases:
  - name: warmup
    duration: 1s
  - name: db-errors
    duration: 1s
    faults:
      - point: itemQuery
        action: error
contracts:
  - name: the default classification calls the 404s primary
    phase: db-errors
    expect:
      - primary >= 99%%
  - name: no status class shifts under the fault
    phase: db-errors
    expect:
      - status_shift("4xx") <= 10%%
`

// A fault hidden behind a client-error status is found without a rule: the
// 4xx share of GET /items/{id} shifts from 0%% in warmup to 100%% in
// db-errors, a finding in the table and report.json, and status_shift
// asserts on it.
func TestStatusShiftFinding(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, dir, "hidden.yaml", fmt.Sprintf(hiddenFaultScenario, fixtureBin(t), filepath.Join(repoRoot(t), "testdata", "fixture")))
	res := runBin(t, bin, "run", file, "--report-dir", dir)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1 (the shift fails its contract)\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stdout, "hidden-fault: finding: GET /items/{id} answered 4xx to 100% (") {
		t.Errorf("the table names no finding:\n%s", res.stdout)
	}
	var rep struct {
		Scenarios []struct {
			Contracts []struct {
				Name     string `json:"name"`
				Verdict  string `json:"verdict"`
				Measured string `json:"measured"`
			} `json:"contracts"`
			Findings []struct {
				Kind          string   `json:"kind"`
				Phase         string   `json:"phase"`
				Route         string   `json:"route"`
				Status        string   `json:"status"`
				Baseline      string   `json:"baseline"`
				Share         float64  `json:"share"`
				BaselineShare float64  `json:"baseline_share"`
				Faults        []string `json:"faults"`
			} `json:"findings"`
		} `json:"scenarios"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Scenarios[0]
	if len(s.Contracts) != 2 || s.Contracts[0].Verdict != "pass" || s.Contracts[1].Verdict != "fail" ||
		!strings.HasPrefix(s.Contracts[1].Measured, "+100 points: GET /items/{id} 4xx 100%") {
		t.Errorf("contracts: %+v", s.Contracts)
	}
	if len(s.Findings) != 1 {
		t.Fatalf("findings: %+v", s.Findings)
	}
	f := s.Findings[0]
	if f.Kind != "status_shift" || f.Phase != "db-errors" || f.Route != "GET /items/{id}" || f.Status != "4xx" || f.Baseline != "warmup" ||
		f.Share != 100 || f.BaselineShare != 0 || len(f.Faults) != 1 || !strings.HasSuffix(f.Faults[0], "/itemQuery") {
		t.Errorf("finding: %+v", f)
	}
}
