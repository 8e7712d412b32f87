package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// These tests run chaoskit fuzz and explore for real: every trial starts
// the demo, drives vegeta load and switches failpoints, on a fault space
// small and short enough for the suite. make fuzz-demo runs the bundled
// shop scenario for the full two minutes.

const quickFuzz = "testdata/fuzz-quick.yaml"

const recoveryInvariant = "the last second of recovery is served by the database"

type fuzzJSON struct {
	Seed   uint64 `json:"seed"`
	Result struct {
		Trials []struct {
			Schedule string   `json:"schedule"`
			Failed   []string `json:"failed"`
		} `json:"trials"`
		Violation *struct {
			Invariant string    `json:"invariant"`
			Schedules [2]string `json:"schedules"`
			Shrink    struct {
				Runs int `json:"runs"`
			} `json:"shrink"`
		} `json:"violation"`
		Coverage struct {
			Runs   int `json:"runs"`
			Faults []struct {
				Key       string `json:"fault"`
				Scheduled int    `json:"scheduled"`
				Fired     int    `json:"fired"`
			} `json:"faults"`
			Invariants []struct {
				Name string `json:"name"`
				Pass int    `json:"pass"`
			} `json:"invariants"`
		} `json:"coverage"`
	} `json:"result"`
	Reproducer string `json:"reproducer"`
	Confirmed  *bool  `json:"confirmed"`
}

func readJSON(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func TestFuzzCorrectDemoFindsNothingAndSameSeedSameSchedules(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	var reps [2]fuzzJSON
	for i := range reps {
		out := filepath.Join(dir, strconv.Itoa(i))
		res := runBin(t, bin, "fuzz", quickFuzz, "--runs", "2", "--seed", "7", "--report-dir", out)
		if res.code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
		}
		for _, want := range []string{"fuzzing quick", "seed 7", "trial 1 ", "trial 2 ", "coverage over 2 runs", "store/productQuery=error", "no invariant broken in 2 trials"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, res.stdout)
			}
		}
		readJSON(t, filepath.Join(out, "fuzz.json"), &reps[i])
		// Passing trials leave no run directories behind.
		if _, err := os.Stat(filepath.Join(out, "trials")); err == nil {
			t.Error("the trials directory was kept")
		}
	}
	a, b := reps[0].Result, reps[1].Result
	if len(a.Trials) != 2 || len(b.Trials) != 2 || a.Trials[0].Schedule != b.Trials[0].Schedule || a.Trials[1].Schedule != b.Trials[1].Schedule {
		t.Fatalf("seed 7 ran %+v, then %+v", a.Trials, b.Trials)
	}
	if a.Violation != nil || a.Coverage.Runs != 2 || len(a.Coverage.Invariants) != 2 || a.Coverage.Invariants[1].Pass != 2 {
		t.Errorf("result %+v", a)
	}
	fired := 0
	for _, f := range a.Coverage.Faults {
		fired += f.Fired
	}
	if fired == 0 {
		t.Errorf("no fault fired: %+v", a.Coverage.Faults)
	}
}

var validateShape = regexp.MustCompile(`\((\d+) phases, (\d+) faults, (\d+) contracts\)`)

func TestFuzzFindsPlantedBugShrinksAndReplays(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "fuzz", quickFuzz, "--var", "bug=stale-after-recovery", "--seed", "1", "--budget", "60s", "--report-dir", out)
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var rep fuzzJSON
	readJSON(t, filepath.Join(out, "fuzz.json"), &rep)
	v := rep.Result.Violation
	if v == nil || v.Invariant != recoveryInvariant || rep.Confirmed == nil || !*rep.Confirmed || v.Shrink.Runs == 0 {
		t.Fatalf("fuzz.json %+v\n%s", rep, res.stdout)
	}
	for _, want := range []string{"violation: \"" + recoveryInvariant, "shrink ", " kept ", "reproducer: " + filepath.Join(out, "reproducer.yaml"), "confirming: chaoskit run"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	if !strings.Contains(res.stderr, "replay with: chaoskit run "+filepath.Join(out, "reproducer.yaml")) {
		t.Errorf("stderr: %s", res.stderr)
	}
	// The reproducer is an ordinary scenario: at most 2 phases and 1 fault.
	repro := filepath.Join(out, "reproducer.yaml")
	val := runBin(t, bin, "validate", repro)
	m := validateShape.FindStringSubmatch(val.stdout)
	if val.code != 0 || m == nil || atoi(m[1]) > 2 || m[2] != "1" || m[3] != "2" {
		t.Fatalf("validate: exit %d %s %s", val.code, val.stdout, val.stderr)
	}
	// The violating trial's run directory is kept, the others are not
	// (and the marker that says the directory is chaoskit's).
	trials, _ := os.ReadDir(filepath.Join(out, "trials"))
	trials = slices.DeleteFunc(trials, func(e os.DirEntry) bool { return e.Name() == ".chaoskit" })
	if len(trials) != 2 || !strings.HasPrefix(trials[0].Name(), "trial-") {
		t.Errorf("trials kept: %v", trials)
	}
	// chaoskit run replays it: exit 1 on the same invariant.
	replay := runBin(t, bin, "run", repro, "--report-dir", filepath.Join(dir, "replay"))
	if replay.code != 1 {
		t.Fatalf("replay: exit %d\n%s", replay.code, replay.stdout)
	}
	if r := readReport(t, filepath.Join(dir, "replay")); failed(r) != recoveryInvariant {
		t.Errorf("replay failed %q", failed(r))
	}
	// Against the correct demo the same reproducer passes: it is the bug
	// it reproduces, not the faults.
	text, _ := os.ReadFile(repro)
	fixed := strings.Replace(string(text), "--bug=stale-after-recovery", "--bug=", 1)
	fixedFile := writeFile(t, dir, "fixed.yaml", fixed)
	if res := runBin(t, bin, "run", fixedFile, "--report-dir", filepath.Join(dir, "fixed")); res.code != 0 {
		t.Errorf("reproducer against the correct demo: exit %d\n%s", res.code, res.stdout)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// failed names the failed contracts of a one-scenario report.
func failed(r reportJSON) string {
	var out []string
	for _, c := range r.Scenarios[0].Contracts {
		if c.Verdict == "fail" {
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, ", ")
}

func TestExplorePrintsTheMatrixAndWhatTheReductionSaved(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	out := t.TempDir()
	res := runBin(t, bin, "explore", quickFuzz, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var rep struct {
		Exploration struct {
			Runs    int `json:"runs"`
			Saved   int `json:"saved"`
			Singles []struct {
				Label string `json:"Label"`
				Run   bool   `json:"run"`
			} `json:"singles"`
			Pairs []struct {
				Label     string `json:"Label"`
				CoveredBy string `json:"covered_by"`
			} `json:"pairs"`
		} `json:"exploration"`
	}
	readJSON(t, filepath.Join(out, "explore.json"), &rep)
	ex := rep.Exploration
	// 3 single faults, 2 pairs on different points; every single runs.
	if len(ex.Singles) != 3 || len(ex.Pairs) != 2 || ex.Runs+ex.Saved != 1+3+2 {
		t.Fatalf("explore.json %+v", ex)
	}
	var rows []string
	for _, line := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (strings.Contains(f[0], "=") || f[0] == "no") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 6 || !strings.Contains(rows[0], "no fault") || !strings.Contains(res.stdout, "I1  every request is answered") {
		t.Errorf("matrix rows:\n%s\n%s", strings.Join(rows, "\n"), res.stdout)
	}
	for _, s := range ex.Singles {
		if !s.Run || !slices.ContainsFunc(rows, func(r string) bool {
			return strings.HasPrefix(strings.TrimSpace(r), s.Label+" ") && strings.Contains(r, "pass")
		}) {
			t.Errorf("single %s: not run or not in the matrix", s.Label)
		}
	}
	want := "the reduction skipped " + strconv.Itoa(ex.Saved) + " pairs whose effect was covered, saving " + strconv.Itoa(ex.Saved) + " runs"
	if !strings.Contains(res.stdout, want) {
		t.Errorf("output lacks %q:\n%s", want, res.stdout)
	}
}
