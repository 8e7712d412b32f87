package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"github.com/spf13/cobra"
)

// inProcess runs chaoskit's command line in this process, as main does,
// and returns its exit code and what it printed.
func inProcess(t *testing.T, args ...string) result {
	t.Helper()
	noColor = false
	t.Cleanup(func() { noColor = false })
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	code := report(&errb, execute(context.Background(), root))
	return result{code, out.String(), errb.String()}
}

const oneScenario = "../../scenarios/db-timeout-serves-cache.yaml"

// Every flag can be set as CHAOSKIT_FLAG_NAME; the command line wins.
func TestFlagsFromTheEnvironment(t *testing.T) {
	t.Setenv("CHAOSKIT_OUTPUT", "json")
	res := inProcess(t, "validate", oneScenario)
	var doc validation
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != 0 || len(doc.Scenarios) != 1 || doc.Scenarios[0].Name != "db-timeout-serves-cache" {
		t.Fatalf("CHAOSKIT_OUTPUT=json validate: exit %d, %v\n%s%s", res.code, err, res.stdout, res.stderr)
	}
	if res := inProcess(t, "validate", oneScenario, "-o", "text"); !strings.HasPrefix(res.stdout, "ok    ") {
		t.Errorf("-o text beside CHAOSKIT_OUTPUT=json printed %q", res.stdout)
	}
	t.Setenv("CHAOSKIT_RATE_SCALE", "zero")
	res = inProcess(t, "validate", oneScenario, "-o", "text")
	if res.code != 2 || !strings.Contains(res.stderr, `CHAOSKIT_RATE_SCALE="zero"`) || !strings.Contains(res.stderr, "--rate-scale") {
		t.Errorf("a bad CHAOSKIT_RATE_SCALE: exit %d, %q", res.code, res.stderr)
	}
}

func TestMisspelledFlagGetsAHint(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--reprot-dir", "x"}, "unknown flag: --reprot-dir (did you mean --report-dir?)"},
		{[]string{"validate", "--bundeld"}, "(did you mean --bundled?)"},
		{[]string{"report", "out", "--no-colour"}, "(did you mean --no-color?)"},
	} {
		res := inProcess(t, tt.args...)
		if res.code != 2 || !strings.Contains(res.stderr, tt.want) {
			t.Errorf("%q: exit %d, %q, want %q", tt.args, res.code, res.stderr, tt.want)
		}
	}
	if res := inProcess(t, "run", "--zzzzzzzz"); strings.Contains(res.stderr, "did you mean") {
		t.Errorf("a flag near none got a hint: %q", res.stderr)
	}
}

func TestVersionFlag(t *testing.T) {
	res := inProcess(t, "--version")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "chaoskit ") {
		t.Errorf("--version: exit %d, %q", res.code, res.stdout)
	}
	// A release build (make build at a tag: -X main.version) prints the
	// tag, as docs/modules.md says.
	defer func(v string) { version = v }(version)
	version = "v0.4.0"
	if res := inProcess(t, "--version"); res.stdout != "chaoskit v0.4.0\n" {
		t.Errorf("--version of a v0.4.0 build: %q", res.stdout)
	}
	res = inProcess(t, "version", "-o", "json")
	var b buildInfo
	if err := json.Unmarshal([]byte(res.stdout), &b); err != nil || b.Go == "" || b.Version != "v0.4.0" {
		t.Errorf("version -o json: %v %q", err, res.stdout)
	}
	res = inProcess(t, "version", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &b); err != nil || !strings.Contains(res.stderr, "--json is an old spelling") {
		t.Errorf("version --json: %v %q %q", err, res.stdout, res.stderr)
	}
}

// --no-color turns colour off even on a terminal.
func TestNoColorFlag(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	os.Unsetenv("NO_COLOR")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	noColor = false
	if !colorOK(tty) {
		t.Fatal("no colour on a terminal without --no-color")
	}
	root := newRoot()
	root.SetArgs([]string{"validate", "--no-color", oneScenario})
	root.SetOut(&bytes.Buffer{})
	if err := execute(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	defer func() { noColor = false }()
	if colorOK(tty) {
		t.Error("colour on a terminal with --no-color")
	}
}

// Every command that reports prints JSON with -o json: its result, or the
// error document when it has none.
func TestJSONFromEveryCommand(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nphases: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := inProcess(t, "validate", "-o", "json", oneScenario, "../../scenarios/")
	var v validation
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil || len(v.Scenarios) < 2 {
		t.Errorf("validate -o json: %v\n%s", err, res.stdout)
	}
	for _, args := range [][]string{
		{"validate", "-o", "json", bad},
		{"fuzz", "-o", "json", bad},
		{"explore", "-o", "json", bad},
		{"run", "-o", "json", bad},
	} {
		res := inProcess(t, args...)
		var doc struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
			Problems []struct {
				File string `json:"file"`
				Line int    `json:"line"`
			} `json:"problems"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != 2 || doc.ExitCode != 2 || len(doc.Problems) == 0 || doc.Problems[0].File != bad {
			t.Errorf("%q: exit %d, %v, stdout %q", args, res.code, err, res.stdout)
		}
	}
	// rollback of a directory that holds no run: its error, in JSON too.
	res = inProcess(t, "rollback", "-o", "json", t.TempDir())
	var rb struct {
		Runs  []any  `json:"runs"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rb); err != nil || res.code != 3 || rb.Runs == nil || !strings.Contains(rb.Error, "holds no run directory") {
		t.Errorf("rollback -o json: exit %d, %v, %q %q", res.code, err, res.stdout, res.stderr)
	}
	for _, args := range [][]string{{"validate", "-o", "yaml", bad}, {"fuzz", "-o", "xml", bad}, {"export", "-o", "csv", "--output-file", "x", "out"}} {
		if res := inProcess(t, args...); res.code != 2 || !strings.Contains(res.stderr, "write -o ") {
			t.Errorf("%q: exit %d, %q", args, res.code, res.stderr)
		}
	}
}

// pipeWriter keeps a command going once its reader has left.
func TestPipeWriterOutlivesItsReader(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	if _, err := w.Write([]byte("x")); !strings.Contains(strings.ToLower(err.Error()), "broken pipe") {
		t.Fatalf("a write to a pipe without a reader: %v", err)
	}
	p := &pipeWriter{w: w}
	for range 2 {
		if n, err := p.Write([]byte("line\n")); n != 5 || err != nil {
			t.Fatalf("pipeWriter: %d, %v", n, err)
		}
	}
}

// chaoskit run … | head -2: the reader leaves after two lines; the run
// still writes its reports and exits with the verdict's code, not 141.
func TestRunIntoHeadKeepsTheVerdict(t *testing.T) {
	bin := chaoskitBin(t)
	out := t.TempDir()
	chaos := exec.Command(bin, "run", scenarioFile, "--report-dir", out, "--rate-scale", "0.5", "--format", "table,json,junit")
	chaos.Env = testEnv(t)
	stdout, err := chaos.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	chaos.Stderr = chaos.Stdout
	if err := chaos.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := stdout.Read(buf); err != nil {
		t.Fatal(err)
	}
	stdout.Close() // the reader leaves, as head does
	err = chaos.Wait()
	code := chaos.ProcessState.ExitCode()
	if ws, ok := chaos.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("killed by %v: %v", ws.Signal(), err)
	}
	for _, f := range []string{"report.json", "junit.xml"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s not written (exit %d): %v", f, code, err)
		}
	}
	// The exit code is the verdict's, whichever it was on this machine.
	want := map[string]int{"pass": 0, "fail": 1, "inconclusive": 1}[readReport(t, out).Verdict]
	if code != want {
		t.Errorf("exit %d, want %d, the verdict's", code, want)
	}
}

// -o/--output is a format in every command that has it, never a file.
func TestOutputFlagIsAFormatEverywhere(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("output"); f != nil {
			n++
			if f.Shorthand != "o" || (f.DefValue != "text" && f.DefValue != "jsonl") {
				t.Errorf("%s: -o/--output is %q (default %q), want a format", c.CommandPath(), f.Usage, f.DefValue)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot())
	if n < 10 {
		t.Errorf("%d commands have -o, want run, report, validate, fuzz, explore, version, points, build, export, rollback and init", n)
	}
}

// fuzz -o json prints fuzz.json's document alone on stdout, the progress
// on stderr.
func TestFuzzJSONOnStdout(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	out := t.TempDir()
	res := runBin(t, bin, "fuzz", quickFuzz, "--runs", "1", "--seed", "7", "--report-dir", out, "-o", "json")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var doc fuzzJSON
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	if err := dec.Decode(&doc); err != nil || dec.More() {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, res.stdout)
	}
	var file fuzzJSON
	readJSON(t, filepath.Join(out, "fuzz.json"), &file)
	if doc.Seed != 7 || len(doc.Result.Trials) != 1 || doc.Result.Trials[0].Schedule != file.Result.Trials[0].Schedule {
		t.Errorf("stdout %+v, fuzz.json %+v", doc, file)
	}
	if !strings.Contains(res.stderr, "fuzzing quick") || strings.Contains(res.stdout, "fuzzing quick") {
		t.Errorf("the progress is not on stderr alone:\nstdout %s\nstderr %s", res.stdout, res.stderr)
	}
}
