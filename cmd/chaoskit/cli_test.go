package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

// complete runs cobra's hidden completion command in process and returns
// the values offered.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{"__complete"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("complete %v: %v", args, err)
	}
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, ":") {
			values = append(values, line)
		}
	}
	return values
}

func TestCompletionValues(t *testing.T) {
	bundled := bundledNames(t)
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--format", ""}, []string{"table", "json", "junit", "markdown", "html"}},
		{[]string{"run", "--format", "table,js"}, []string{"table,json", "table,junit", "table,markdown", "table,html"}},
		{[]string{"report", "out", "--format", "json,html,"}, []string{"json,html,table", "json,html,junit", "json,html,markdown"}},
		{[]string{"run", "--bundled", "--only", ""}, bundled},
		{[]string{"run", filepath.Join("..", "..", "scenarios", "overload-shedding.yaml"), "--only", ""}, []string{"overload-shedding"}},
		{[]string{"fuzz", "--bundled", ""}, []string{"shop"}},
		{[]string{"explore", "--bundled", ""}, []string{"shop"}},
	} {
		if got := complete(t, tt.args...); !slices.Equal(got, tt.want) {
			t.Errorf("complete %q = %q, want %q", tt.args, got, tt.want)
		}
	}
}

// version reports the module and the VCS data the go command stamped into
// the binary, as go version -m reads them.
func TestVersionReportsBuildInfo(t *testing.T) {
	root := repoRoot(t)
	bin := filepath.Join(t.TempDir(), "chaoskit")
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, "./cmd/chaoskit")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	meta, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var revision string
	for _, line := range strings.Split(string(meta), "\n") {
		if _, rev, ok := strings.Cut(line, "vcs.revision="); ok {
			revision = strings.TrimSpace(rev)
		}
	}
	if revision == "" {
		t.Skip("the go command stamped no VCS data here (not a git checkout, or a git worktree)")
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version        string `json:"version"`
		Module         string `json:"module"`
		Go             string `json:"go"`
		Revision       string `json:"vcs_revision"`
		Time           string `json:"vcs_time"`
		FaultInjection bool   `json:"fault_injection"`
		Rewritten      bool   `json:"markers_rewritten"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if v.Module != "github.com/chaoskit/chaoskit" || v.Revision != revision || v.Time == "" || !strings.HasPrefix(v.Go, "go1.") || !v.FaultInjection || v.Rewritten {
		t.Errorf("version --json = %+v, want revision %s of a plain build", v, revision)
	}
	text, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"built from github.com/chaoskit/chaoskit at " + v.Revision, "fault injection: yes", "needs `chaoskit build`"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("version lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(string(text), "markers: rewritten") {
		t.Errorf("a plain build says its markers are rewritten:\n%s", text)
	}
}

// make demo writes out/report.html, as README says.
func TestMakeDemoWritesEveryReport(t *testing.T) {
	out, err := exec.Command("make", "-C", repoRoot(t), "-n", "demo").Output()
	if err != nil {
		t.Skipf("make -n demo: %v", err)
	}
	var formats string
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, " run scenarios/ "); i >= 0 {
			if _, rest, ok := strings.Cut(line[i:], "--format "); ok {
				formats, _, _ = strings.Cut(rest, " ")
			}
		}
	}
	fs, err := reports.ParseFormats(formats)
	if err != nil || !slices.Contains(fs, reports.HTML) || !slices.Contains(fs, reports.Table) {
		t.Errorf("make demo writes the formats %q (%v), want the table and HTML among them:\n%s", formats, err, out)
	}
}

// chaoskit schema prints the scenario format's JSON Schema, the one
// package plan's tests validate every bundled scenario against.
func TestSchemaCommandPrintsTheSchema(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"schema"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	want, err := plan.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(out.Bytes()), want) {
		t.Errorf("chaoskit schema printed %d bytes, not plan.JSONSchema's %d", out.Len(), len(want))
	}
}
