package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/exitcode"
)

// shortScenario is a second of steady load on the demo; its contract
// passes with STATUS 200 and fails with 404.
const shortScenario = `name: short
target:
  demo:
    args: []
load:
  rate: 50/s
  requests:
    - path: /products/{1..5}
phases:
  - name: steady
    duration: 1s
contracts:
  - name: reads succeed
    phase: steady
    min_samples: 10
    expect:
      - status == STATUS for >= 99%
`

// shortContractLine is the line and column of shortScenario's contract.
const shortContractLine = "line=13,col=5"

// stdoutDocument decodes stdout as exactly one JSON document.
func stdoutDocument(t *testing.T, res result) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not JSON (%v):\n%s\nstderr:\n%s", err, res.stdout, res.stderr)
	}
	if err := dec.Decode(&json.RawMessage{}); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON document (%v):\n%s", err, res.stdout)
	}
	return doc
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// With -o json stdout holds one JSON document and nothing else, whatever
// the exit code: the report (0, 1, and 3 when a run broke), or the error
// document when no report was made (2); the progress, the table and the
// diagnostics go to stderr, and the exit codes are those of text output.
// --quiet prints the verdict line alone.
func TestMachineOutput(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	passing := strings.Replace(shortScenario, "STATUS", "200", 1)
	pass := writeFile(t, dir, "pass.yaml", passing)
	fail := writeFile(t, dir, "fail.yaml", strings.Replace(shortScenario, "STATUS", "404", 1))
	invalid := writeFile(t, dir, "invalid.yaml", strings.Replace(passing, "rate: 50/s", "rate: fast", 1))
	down := writeFile(t, dir, "down.yaml", strings.Replace(passing, "  demo:\n    args: []\n",
		"  url: http://127.0.0.1:"+strconv.Itoa(closedPort(t))+"\n  ready: {timeout: 300ms}\n", 1))
	passed := filepath.Join(dir, "passed")

	for _, tt := range []struct {
		name  string
		args  []string
		code  int
		check func(t *testing.T, res result, doc map[string]any)
	}{
		{"run passes", []string{"run", pass, "--report-dir", passed, "-o", "json"}, 0, func(t *testing.T, res result, doc map[string]any) {
			if doc["verdict"] != "pass" {
				t.Errorf("verdict %v", doc["verdict"])
			}
			file, err := os.ReadFile(filepath.Join(passed, "report.json"))
			if err != nil || string(file) != res.stdout {
				t.Errorf("report.json (%v) differs from stdout:\n%s", err, file)
			}
			for _, want := range []string{"short (" + pass + ") [1/1]", "│ SCENARIO", "PASS: 1 scenarios", "report: " + filepath.Join(passed, "report.json")} {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
				}
			}
		}},
		{"run fails", []string{"run", fail, "--report-dir", filepath.Join(dir, "failed"), "--json"}, 1, func(t *testing.T, _ result, doc map[string]any) {
			if doc["verdict"] != "fail" {
				t.Errorf("verdict %v", doc["verdict"])
			}
		}},
		{"run of an invalid scenario", []string{"run", invalid, "--report-dir", filepath.Join(dir, "invalid"), "-o", "json"}, 2, func(t *testing.T, res result, doc map[string]any) {
			problems, _ := doc["problems"].([]any)
			if doc["exit_code"] != 2.0 || len(problems) != 1 || problems[0].(map[string]any)["line"] != 6.0 {
				t.Errorf("error document = %v", doc)
			}
			if !strings.Contains(res.stderr, "invalid.yaml:6:9: ") {
				t.Errorf("stderr lacks the error:\n%s", res.stderr)
			}
		}},
		{"run of a target that is down", []string{"run", down, "--report-dir", filepath.Join(dir, "down"), "-o", "json"}, 3, func(t *testing.T, res result, doc map[string]any) {
			scs, _ := doc["scenarios"].([]any)
			if doc["verdict"] != "inconclusive" || len(scs) != 1 || !strings.Contains(scs[0].(map[string]any)["error"].(string), "not ready") {
				t.Errorf("report = %v", doc)
			}
			if !strings.Contains(res.stderr, "chaoskit: ") {
				t.Errorf("stderr lacks the cause:\n%s", res.stderr)
			}
		}},
		{"report", []string{"report", passed, "-o", "json"}, 0, func(t *testing.T, res result, doc map[string]any) {
			if doc["verdict"] != "pass" || !strings.Contains(res.stderr, "judged with "+filepath.Join(passed, "short", "scenario.yaml")) {
				t.Errorf("verdict %v, stderr:\n%s", doc["verdict"], res.stderr)
			}
		}},
		{"report judged stricter", []string{"report", filepath.Join(passed, "short"), "--scenario", fail, "--report-dir", filepath.Join(dir, "stricter"), "-o", "json"}, 1,
			func(t *testing.T, _ result, doc map[string]any) {
				if doc["verdict"] != "fail" {
					t.Errorf("verdict %v", doc["verdict"])
				}
			}},
		{"report of no run", []string{"report", filepath.Join(dir, "missing"), "--json"}, 2, func(t *testing.T, _ result, doc map[string]any) {
			if doc["exit_code"] != 2.0 || !strings.Contains(doc["error"].(string), "is not a directory") {
				t.Errorf("error document = %v", doc)
			}
		}},
	} {
		// The report cases read the passing run's directory: in order.
		res := runBin(t, bin, tt.args...)
		if res.code != tt.code {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.name, res.code, tt.code, res.stdout, res.stderr)
		}
		t.Run(tt.name, func(t *testing.T) { tt.check(t, res, stdoutDocument(t, res)) })
	}

	for _, args := range [][]string{{"report", passed, "--quiet"}, {"report", passed, "-q", "--format", "table,json"}} {
		res := runBin(t, bin, args...)
		if res.code != 0 || !strings.HasPrefix(res.stdout, "PASS: 1 scenarios, 1 contracts: 1 passed, 0 failed, 0 inconclusive (") || strings.Count(res.stdout, "\n") != 1 || res.stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the verdict line alone", args, res.code, res.stdout, res.stderr)
		}
	}
}

// As a GitHub Actions step chaoskit appends the Markdown report to the
// step summary and annotates the failed contract's line: on stdout as
// GitHub documents it, and on stderr when stdout holds only the report.
func TestGitHubActionsStep(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	dir := t.TempDir()
	fail := writeFile(t, dir, "fail.yaml", strings.Replace(shortScenario, "STATUS", "404", 1))
	summary := writeFile(t, dir, "step_summary", "")
	env := []string{"GITHUB_ACTIONS=true", "GITHUB_STEP_SUMMARY=" + summary, "GITHUB_WORKSPACE=" + dir}
	annotation := "::error file=fail.yaml," + shortContractLine + ",title=chaoskit%3A short / reads succeed%3A fail::window steady, "

	res := runBinEnv(t, env, bin, "run", fail, "--report-dir", filepath.Join(dir, "out"), "-o", "json")
	if res.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	stdoutDocument(t, res)
	if !strings.Contains(res.stderr, annotation) || !strings.Contains(res.stderr, "%0Astatus == 404 for >= 99%25: measured 0%25") {
		t.Errorf("stderr lacks the annotation %s…:\n%s", annotation, res.stderr)
	}
	// Judged again, in text output: the annotation on stdout.
	res = runBinEnv(t, env, bin, "report", filepath.Join(dir, "out"))
	if res.code != 1 || !strings.Contains(res.stdout, "\n"+annotation) || strings.Contains(res.stderr, "::error") {
		t.Errorf("report: exit %d, stdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "## chaoskit: ❌ FAIL"); got != 2 || !strings.Contains(string(data), "#### ❌ short / reads succeed: fail") {
		t.Errorf("step summary holds %d reports, want 2:\n%s", got, data)
	}
}

// The output flags refuse what they cannot mean, as usage errors.
func TestOutputFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--bundled", "-o", "yaml"}, "-o yaml: write -o text or -o json"},
		{[]string{"report", "out", "--json", "-o", "text"}, "--json and -o text: give one of them"},
		{[]string{"fuzz", "--bundled", "shop", "--json"}, "unknown flag: --json"},
	} {
		root := newRoot()
		var stdout bytes.Buffer
		root.SetOut(&stdout)
		root.SetErr(io.Discard)
		root.SetArgs(tt.args)
		err := execute(context.Background(), root)
		if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), tt.want) || stdout.Len() > 0 {
			t.Errorf("%v: %v (exit %d), stdout %q; want exit 2 with %q", tt.args, err, exitcode.Of(err), stdout.String(), tt.want)
		}
	}
}
