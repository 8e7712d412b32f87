package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

// twoRuns saves a run that passes (threshold 85%) and one that fails (95%)
// below a new directory, and returns it.
func twoRuns(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	saveRun(t, filepath.Join(root, "a"), "85", true)
	saveRun(t, filepath.Join(root, "b"), "95", true)
	return root
}

// oneJSONDocument decodes data as exactly one JSON document into v.
func oneJSONDocument(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); err != io.EOF {
		t.Fatalf("more than one JSON document (%v): %s", err, extra)
	}
}

// Each mode prints its result where it says, and writes the report files
// the formats name whatever the mode.
func TestOutputModes(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode OutputMode
		// check judges what Out and Results received.
		check func(t *testing.T, out, results string, file []byte)
	}{
		{"text", OutputText, func(t *testing.T, out, results string, _ []byte) {
			if results != "" {
				t.Errorf("results received %q", results)
			}
			for _, want := range []string{"saved (", "│ SCENARIO", "FAIL: 2 scenarios, 2 contracts: 1 passed, 1 failed", "report: "} {
				if !strings.Contains(out, want) {
					t.Errorf("out lacks %q:\n%s", want, out)
				}
			}
		}},
		{"json", OutputJSON, func(t *testing.T, out, results string, file []byte) {
			var rep reports.Report
			oneJSONDocument(t, []byte(results), &rep)
			if rep.Verdict != "fail" || len(rep.Scenarios) != 2 || rep.Scenarios[1].Contracts[0].Measured != "90% (90/100)" {
				t.Errorf("printed report = %+v", rep)
			}
			if results != string(file) {
				t.Errorf("printed report differs from report.json:\n%s\n---\n%s", results, file)
			}
			for _, want := range []string{"saved (", "│ SCENARIO", "report: "} {
				if !strings.Contains(out, want) {
					t.Errorf("out lacks %q:\n%s", want, out)
				}
			}
		}},
		{"quiet", OutputQuiet, func(t *testing.T, out, results string, _ []byte) {
			if out != "" {
				t.Errorf("out received %q", out)
			}
			if !strings.HasPrefix(results, "FAIL: 2 scenarios, 2 contracts: 1 passed, 1 failed, 0 inconclusive (") || strings.Count(results, "\n") != 1 {
				t.Errorf("results = %q, want the verdict line only", results)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := twoRuns(t)
			var out, results bytes.Buffer
			_, err := Rejudge(root, RejudgeOptions{Out: &out, Results: &results, Mode: tt.mode, Formats: []reports.Format{reports.Table, reports.JSON}})
			if exitcode.Of(err) != exitcode.Fail {
				t.Fatalf("err = %v, want exit 1", err)
			}
			file, err := os.ReadFile(filepath.Join(root, reports.FileJSON))
			if err != nil {
				t.Fatalf("report.json not written: %v", err)
			}
			tt.check(t, out.String(), results.String(), file)
		})
	}
}

// A report that cannot be written still prints its result, and the error
// says why (exit 3).
func TestOutputPrintsWhenAFileFails(t *testing.T) {
	root := twoRuns(t)
	dir := filepath.Join(root, "reports")
	opts := RejudgeOptions{ReportDir: dir, Mode: OutputJSON, Formats: []reports.Format{reports.JSON}}
	if _, err := Rejudge(root, opts); exitcode.Of(err) != exitcode.Fail {
		t.Fatalf("first report: %v", err)
	}
	// A directory, not empty, where report.json goes in a report directory
	// chaoskit made: the file cannot replace it.
	if err := os.Remove(filepath.Join(dir, reports.FileJSON)); err != nil {
		t.Fatal(err)
	}
	put(t, dir, map[string]string{filepath.Join(reports.FileJSON, "x"): "x"})
	var results bytes.Buffer
	opts.Results = &results
	_, err := Rejudge(root, opts)
	if exitcode.Of(err) != exitcode.Infra {
		t.Fatalf("err = %v, want exit 3", err)
	}
	var rep reports.Report
	oneJSONDocument(t, results.Bytes(), &rep)
}

func TestWriteErrorJSON(t *testing.T) {
	_, invalid := plan.Parse("bad.yaml", []byte("name: x\nphases: []\ntarget: {url: http://127.0.0.1:1}\n"), plan.Options{})
	for _, tt := range []struct {
		name     string
		err      error
		code     int
		problems int
	}{
		{"invalid scenario", invalid, exitcode.Invalid, 3},
		{"one scenario error", &plan.Error{File: "a.yaml", Line: 3, Col: 5, Msg: "bad", Hint: "good"}, exitcode.Invalid, 1},
		{"infrastructure", exitcode.Wrap(exitcode.Infra, errors.New("will not write reports into out")), exitcode.Infra, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteErrorJSON(&b, tt.err); err != nil {
				t.Fatal(err)
			}
			var r ErrorReport
			oneJSONDocument(t, b.Bytes(), &r)
			if r.ExitCode != tt.code || r.Error != tt.err.Error() || len(r.Problems) != tt.problems || r.SchemaVersion != reports.SchemaVersion {
				t.Fatalf("error report = %+v", r)
			}
			for _, p := range r.Problems {
				if p.File == "" || p.Line == 0 || p.Column == 0 || p.Message == "" {
					t.Errorf("problem without a position: %+v", p)
				}
			}
		})
	}
}

// The phase lines, which stay, wrap within the width the table fits in
// (COLUMNS, 0 for none); only the live line is cut to the terminal's own.
func TestRunnerGetsBothWidths(t *testing.T) {
	o := Options{Width: 0, LiveWidth: 120}
	if ro := o.runnerOptions("dir"); ro.Width != 0 || ro.LiveWidth != 120 {
		t.Errorf("runner widths %d (lines that stay) and %d (live line), want 0 and 120", ro.Width, ro.LiveWidth)
	}
}
