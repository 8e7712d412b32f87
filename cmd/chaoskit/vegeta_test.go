package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// vegetaBin builds the vegeta CLI of the module version go.mod pins.
func vegetaBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vegeta")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/tsenart/vegeta/v12")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build vegeta: %v\n%s", err, out)
	}
	return bin
}

const vegetaScenario = `name: vegeta-compat
target:
  url: %s
load:
  rate: 300/s
  timeout: 1s
  requests:
    - path: /items/{1..5}
phases:
  - name: one
    duration: 1s
  - name: two
    duration: 1s
  - name: three
    duration: 1s
contracts:
  - name: answers
    expect:
      - count >= 1
`

// TestVegetaPlotAndReportReadTheResults holds results.bin to what vegeta's
// own tools need: `vegeta report` counts what chaoskit counts, and `vegeta
// plot` draws a point for every request of every phase (it orders points
// by their sequence numbers, one numbering for the whole file).
func TestVegetaPlotAndReportReadTheResults(t *testing.T) {
	bin := chaoskitBin(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"ok":true}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	file := writeFile(t, dir, "s.yaml", fmt.Sprintf(vegetaScenario, srv.URL))
	out := filepath.Join(dir, "out")
	if res := runBin(t, bin, "run", file, "--report-dir", out); res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	runDir := filepath.Join(out, "vegeta-compat")
	results := filepath.Join(runDir, "results.bin")
	var sum struct {
		Requests int `json:"requests"`
	}
	data, _ := os.ReadFile(filepath.Join(runDir, "run.json"))
	json.Unmarshal(data, &sum)
	tl := readTimeline(t, runDir)
	statuses := map[string]int{}
	for _, r := range tl.Requests {
		statuses[fmt.Sprint(r.Status)]++
	}
	if sum.Requests < 800 || len(tl.Requests) != sum.Requests {
		t.Fatalf("run.json counts %d requests, the timeline %d", sum.Requests, len(tl.Requests))
	}

	vegeta := vegetaBin(t)
	rep, err := exec.Command(vegeta, "report", "-type=json", results).Output()
	if err != nil {
		t.Fatalf("vegeta report: %v", err)
	}
	var vrep struct {
		Requests    int            `json:"requests"`
		StatusCodes map[string]int `json:"status_codes"`
	}
	if err := json.Unmarshal(rep, &vrep); err != nil {
		t.Fatalf("vegeta report: %v\n%s", err, rep)
	}
	if vrep.Requests != sum.Requests || fmt.Sprint(vrep.StatusCodes) != fmt.Sprint(statuses) {
		t.Errorf("vegeta report counts %d requests %v, chaoskit %d %v", vrep.Requests, vrep.StatusCodes, sum.Requests, statuses)
	}

	html, err := exec.Command(vegeta, "plot", "-threshold", "100000000", results).Output()
	if err != nil {
		t.Fatalf("vegeta plot: %v", err)
	}
	_, rows, ok := strings.Cut(string(html), "const rowData = ")
	rows, _, ok2 := strings.Cut(rows, ";")
	if !ok || !ok2 {
		t.Fatalf("vegeta plot wrote no data rows:\n%.300s", html)
	}
	if points := strings.Count(rows, "\n    ["); points != sum.Requests {
		t.Errorf("vegeta plot draws %d points of %d requests", points, sum.Requests)
	}
}
