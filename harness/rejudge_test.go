package harness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/timeline"
)

// readReport reads dir/report.json.
func readReport(t *testing.T, dir string) *reports.Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, reports.FileJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r reports.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// rejudge runs Rejudge with the given formats into out.
func rejudge(out *bytes.Buffer, root, formats, reportDir, scenario string) error {
	fs, err := reports.ParseFormats(formats)
	if err != nil {
		return err
	}
	_, err = Rejudge(root, RejudgeOptions{Out: out, Formats: fs, ReportDir: reportDir, Scenario: scenario})
	return err
}

const savedScenario = `name: saved
target:
  demo:
    args: []
load:
  rate: 100/s
  requests:
    - path: /products/{1..5}
phases:
  - name: warmup
    duration: 1s
  - name: fault
    duration: 1s
    faults:
      - point: productQuery
        action: timeout
contracts:
  - name: served from the cache
    phase: fault
    expect:
      - fallback >= THRESHOLD%
classify:
  source_header: X-Served-From
`

// saveRun writes a run directory as chaoskit run leaves it: the timeline
// of a run in which 90% of the fault phase was served from the cache, and
// the scenario it ran.
func saveRun(t *testing.T, dir, threshold string, complete bool) {
	t.Helper()
	saveRunWith(t, dir, timeline.Meta{}, complete)
	writeScenario(t, dir, threshold)
}

// saveRunWith writes the timeline of saveRun, with meta's Vars,
// RateScale and Shard, starting at meta.Start when it is set, and no
// scenario. The record names meta.File as the scenario file when it is
// set, else gone.yaml in dir, which does not exist.
func saveRunWith(t *testing.T, dir string, meta timeline.Meta, complete bool) {
	t.Helper()
	saveRunSwitching(t, dir, meta, complete, true)
}

// saveRunSwitching is saveRunWith, switching the fault only when switches
// is set (as shard 1 does, and shards 2..n do not).
func saveRunSwitching(t *testing.T, dir string, meta timeline.Meta, complete, switches bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if !meta.Start.IsZero() {
		t0 = meta.Start
	}
	w := timeline.NewWriter(f)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if meta.Scenario == "" {
		meta.Scenario = "saved"
	}
	if meta.File == "" {
		meta.File = filepath.Join(dir, "gone.yaml")
	}
	meta.Start = t0
	must(w.Meta(meta))
	hits := int64(9)
	seq := uint64(0)
	for k, phase := range []string{"warmup", "fault"} {
		start := t0.Add(time.Duration(k) * time.Second)
		must(w.Event(timeline.Event{Time: start, Kind: timeline.PhaseStart, Phase: phase, Planned: time.Second}))
		if phase == "fault" && switches {
			must(w.Event(timeline.Event{Time: start, Kind: timeline.FaultOn, Phase: phase, Point: "demo/store/productQuery"}))
		}
		for i := 0; i < 100; i++ {
			seq++
			source := "db"
			if phase == "fault" && i%10 != 0 {
				source = "cache"
			}
			must(w.Request(&timeline.Request{Seq: seq, Phase: phase, Time: start.Add(time.Duration(i) * 10 * time.Millisecond), Method: "GET",
				Target: fmt.Sprintf("GET /products/%d", i%5+1), Status: 200, Latency: time.Millisecond, Headers: map[string]string{"X-Served-From": source}}))
		}
		must(w.Event(timeline.Event{Time: start.Add(time.Second), Kind: timeline.PhaseEnd, Phase: phase}))
		if phase == "fault" && switches {
			must(w.Event(timeline.Event{Time: start.Add(time.Second), Kind: timeline.FaultOff, Phase: phase, Point: "demo/store/productQuery"}))
			must(w.Event(timeline.Event{Time: start.Add(time.Second), Kind: timeline.FaultHits, Phase: phase, Point: "demo/store/productQuery", Hits: &hits}))
		}
	}
	if complete {
		must(w.Event(timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.RunEnd, Message: "completed"}))
	}
	must(w.Flush())
}

func writeScenario(t *testing.T, dir, threshold string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(strings.Replace(savedScenario, "THRESHOLD", threshold, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReportRejudgesSavedRuns(t *testing.T) {
	root := t.TempDir()
	saveRun(t, filepath.Join(root, "a"), "85", true)
	saveRun(t, filepath.Join(root, "nested", "b"), "95", true)

	var out bytes.Buffer
	err := rejudge(&out, root, "table,json", "", "")
	if exitcode.Of(err) != exitcode.Fail {
		t.Fatalf("err = %v, want exit 1 (one run fails)\n%s", err, out.String())
	}
	rep := readReport(t, root)
	if len(rep.Scenarios) != 2 || rep.Scenarios[0].Verdict != contract.Pass || rep.Scenarios[1].Verdict != contract.Fail ||
		rep.Scenarios[1].Contracts[0].Measured != "90% (90/100)" {
		t.Fatalf("report = %+v", rep)
	}
	for _, want := range []string{"saved (" + filepath.Join(root, "a") + ", judged with " + filepath.Join(root, "a", "scenario.yaml") + ")",
		"run dir: " + filepath.Join(root, "nested", "b") + "\n", "report: " + filepath.Join(root, "report.json")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// Edit the contract: the run is judged again as the scenario says now.
	writeScenario(t, filepath.Join(root, "nested", "b"), "80")
	out.Reset()
	if err := rejudge(&out, filepath.Join(root, "nested", "b"), "json", filepath.Join(root, "again"), ""); err != nil {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	rep = readReport(t, filepath.Join(root, "again"))
	if len(rep.Scenarios) != 1 || rep.Scenarios[0].Verdict != contract.Pass || rep.Scenarios[0].Contracts[0].Expected != ">= 80%" {
		t.Errorf("re-judged report = %+v", rep)
	}
}

// TestReportJudgesWithTheCopyNeverTheFileTheRecordNames: the record names
// gone.yaml as the file the run came from; it exists, and is never opened:
// the copy in the run directory judges, and only while it is what the run
// saved. --scenario judges with another file.
func TestReportJudgesWithTheCopyNeverTheFileTheRecordNames(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	saveRun(t, run, "95", true)
	if err := os.WriteFile(filepath.Join(run, "gone.yaml"), []byte(strings.Replace(savedScenario, "THRESHOLD", "50", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_ = rejudge(&out, run, "json", "", "")
	if rep := readReport(t, run); rep.Scenarios[0].Contracts[0].Expected != ">= 95%" {
		t.Errorf("judged with %+v, want the copy's threshold", rep.Scenarios[0].Contracts[0])
	}
	// --scenario overrides the copy.
	other := filepath.Join(root, "other.yaml")
	_ = os.WriteFile(other, []byte(strings.Replace(savedScenario, "THRESHOLD", "99", 1)), 0o644)
	out.Reset()
	_ = rejudge(&out, run, "json", "", other)
	if rep := readReport(t, run); rep.Scenarios[0].Contracts[0].Expected != ">= 99%" {
		t.Errorf("--scenario ignored: %+v", rep.Scenarios[0].Contracts[0])
	}
}

// TestReportRefusesAnEditedCopy: a run that recorded its copy's SHA-256 is
// judged with that copy only while the hash holds.
func TestReportRefusesAnEditedCopy(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	text := strings.Replace(savedScenario, "THRESHOLD", "95", 1)
	sum := sha256.Sum256([]byte(text))
	saveRunWith(t, run, timeline.Meta{ScenarioSHA256: hex.EncodeToString(sum[:])}, true)
	writeScenario(t, run, "95")
	var out bytes.Buffer
	if err := rejudge(&out, run, "json", "", ""); err != nil && !errors.Is(err, ErrContractsFailed) {
		t.Fatalf("the saved copy: %v\n%s", err, out.String())
	}
	writeScenario(t, run, "50")
	out.Reset()
	err := rejudge(&out, run, "json", "", "")
	if err == nil || exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), "it is not the copy the run saved") || !strings.Contains(err.Error(), "--scenario FILE") {
		t.Fatalf("an edited copy: err = %v (exit %d), want exit 2 naming the hash and --scenario", err, exitcode.Of(err))
	}
}

// A run is judged again with the variable values and the rate scale it ran
// with, and from the run directory's copies of the scenario and the files
// it includes once the originals are gone.
func TestReportJudgesAsRun(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(filepath.Join(root, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	// The scenario takes its target, load and contract from an include
	// outside its directory; the contract's threshold is a variable, and a
	// request body comes from a file.
	common := `vars:
  threshold: "95"
target:
  demo:
    args: []
load:
  rate: 100/s
  requests:
    - method: POST
      path: /products/{1..5}
      body_file: body.json
contracts:
  - name: served from the cache
    phase: fault
    expect:
      - fallback >= ${threshold}%
classify:
  source_header: X-Served-From
`
	own := `name: saved
include_dirs: [../shared]
include: ../shared/common.yaml
phases:
  - name: warmup
    duration: 1s
  - name: fault
    duration: 1s
    faults:
      - point: productQuery
        action: timeout
`
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "shared", "common.yaml"), common)
	write(filepath.Join(src, "saved.yaml"), own)
	write(filepath.Join(src, "body.json"), `{}`) // relative to the scenario file
	sc, err := plan.LoadFile(filepath.Join(src, "saved.yaml"), plan.Options{Vars: map[string]string{"threshold": "85"}})
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "out", "saved")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := plan.SaveCopy(run, sc); err != nil {
		t.Fatal(err)
	}
	// The timeline's meta names gone.yaml: the copies are what is left.
	saveRunWith(t, run, timeline.Meta{Vars: sc.Values, RateScale: 0.5}, true)
	for _, dir := range []string{"shared", "src"} {
		if err := os.RemoveAll(filepath.Join(root, dir)); err != nil {
			t.Fatal(err)
		}
	}

	var out bytes.Buffer
	if err := rejudge(&out, run, "json", "", ""); err != nil {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	rep := readReport(t, run)
	if c := rep.Scenarios[0].Contracts[0]; rep.Scenarios[0].Verdict != contract.Pass || c.Expected != ">= 85%" {
		t.Errorf("judged with %+v (verdict %s), want the run's threshold 85%%", c, rep.Scenarios[0].Verdict)
	}
}

func TestReportOfAnInterruptedRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "cut")
	saveRun(t, run, "85", false)
	var out bytes.Buffer
	err := rejudge(&out, run, "table,json", "", "")
	if err == nil {
		t.Fatal("an interrupted run passed")
	}
	rep := readReport(t, run)
	if rep.Scenarios[0].Verdict != contract.Inconclusive || rep.Scenarios[0].Contracts[0].Outcome != contract.Pass {
		t.Errorf("report = %+v", rep)
	}
	if !strings.Contains(out.String(), "the timeline stops short") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestReportInputErrors(t *testing.T) {
	empty := t.TempDir()
	for _, tt := range []struct {
		dir  string
		want string
	}{
		{empty, "no runs in"},
		{filepath.Join(empty, "missing"), "is not a directory"},
	} {
		err := rejudge(&bytes.Buffer{}, tt.dir, "json", "", "")
		if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want exit 2 with %q", tt.dir, err, tt.want)
		}
	}
}

func TestRunDirFrom(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct{ dir, run, want string }{
		{root, filepath.Join(root, "a", "b"), filepath.Join("a", "b")},
		{filepath.Join(root, "a"), filepath.Join(root, "a"), "."},
		{filepath.Join(root, "x"), filepath.Join(root, "a"), filepath.Join(root, "a")},
		{filepath.Join(root, "a"), filepath.Join(root, "a..b"), filepath.Join(root, "a..b")},
	} {
		if got := runDirFrom(tt.dir, tt.run); got != tt.want {
			t.Errorf("runDirFrom(%s, %s) = %s, want %s", tt.dir, tt.run, got, tt.want)
		}
	}
}

// TestReportNeverPrintsAFileTheRecordNames gives a run's record a
// "scenario file" that is a secret, and plants a link to it as the run's
// copy: report refuses, and prints no line of it.
func TestReportNeverPrintsAFileTheRecordNames(t *testing.T) {
	root := t.TempDir()
	secret := filepath.Join(root, "shadow")
	if err := os.WriteFile(secret, []byte("root:$6$secret-hash-line:19000:0:99999:7:::\nsecond-secret-line: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		meta timeline.Meta
		link bool
	}{
		{"named by the record", timeline.Meta{File: secret}, false},
		{"linked as the copy", timeline.Meta{}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			saveRunWith(t, run, tt.meta, true)
			if tt.link {
				if err := os.Symlink(secret, filepath.Join(run, "scenario.yaml")); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			err := rejudge(&out, run, "json", "", "")
			if err == nil {
				t.Fatal("report judged with a file that is no scenario")
			}
			all := out.String() + err.Error()
			if strings.Contains(all, "secret") {
				t.Errorf("report printed the file's content:\n%s", all)
			}
		})
	}
}
