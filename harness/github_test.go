package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/reports"
)

func TestGitHubFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var w bytes.Buffer
	if g := GitHubFromEnv(env(nil), &w); g != nil {
		t.Errorf("outside GitHub Actions: %+v", g)
	}
	if g := GitHubFromEnv(env(map[string]string{"GITHUB_ACTIONS": "1"}), &w); g != nil {
		t.Errorf("GITHUB_ACTIONS=1 is not how the runner says it: %+v", g)
	}
	g := GitHubFromEnv(env(map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": "/s", "GITHUB_WORKSPACE": "/w"}), &w)
	if g == nil || g.StepSummary != "/s" || g.Workspace != "/w" || g.Commands != &w {
		t.Errorf("under GitHub Actions: %+v", g)
	}
}

// Escaping follows GitHub's toolkit: % first so that nothing is escaped
// twice, CR and LF everywhere, and ':' and ',' in property values, where
// they would end the value.
func TestWorkflowCommandEscaping(t *testing.T) {
	for _, tt := range []struct{ in, data, property string }{
		{"plain", "plain", "plain"},
		{"99% (990/1000)", "99%25 (990/1000)", "99%25 (990/1000)"},
		{"%0A", "%250A", "%250A"},
		{"a\r\nb", "a%0D%0Ab", "a%0D%0Ab"},
		{"s / c: fail, again", "s / c: fail, again", "s / c%3A fail%2C again"},
		{"::error::x", "::error::x", "%3A%3Aerror%3A%3Ax"},
	} {
		if got := escapeData(tt.in); got != tt.data {
			t.Errorf("escapeData(%q) = %q, want %q", tt.in, got, tt.data)
		}
		if got := escapeProperty(tt.in); got != tt.property {
			t.Errorf("escapeProperty(%q) = %q, want %q", tt.in, got, tt.property)
		}
	}
}

// Under GitHub Actions the Markdown report is appended to the step summary
// after what the step wrote before, and each contract that did not pass,
// and each run that broke, is an ::error command naming its file (relative
// to the workspace) and the contract's line.
func TestGitHubPublishesSummaryAndAnnotations(t *testing.T) {
	root := twoRuns(t)
	saveRun(t, filepath.Join(root, "c"), "85", false) // cut short: the run broke
	summary := filepath.Join(t.TempDir(), "step_summary")
	if err := os.WriteFile(summary, []byte("## tests\n\nok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, commands bytes.Buffer
	_, err := Rejudge(root, RejudgeOptions{Out: &out, Formats: []reports.Format{reports.JSON},
		GitHub: &GitHub{StepSummary: summary, Commands: &commands, Workspace: root}})
	if exitcode.Of(err) != exitcode.Fail {
		t.Fatalf("err = %v, want exit 1", err)
	}
	if commands.Len() > 0 && strings.Contains(out.String(), "::error") {
		t.Errorf("commands went to Out as well:\n%s", out.String())
	}
	data, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	// After what the step wrote, a paragraph apart: the Markdown report.
	got := string(data)
	for _, want := range []string{"## tests\n\nok\n\n## chaoskit: ❌ FAIL\n", "| saved | served from the cache | fault |", "#### ❌ saved / served from the cache: fail"} {
		if !strings.Contains(got, want) {
			t.Errorf("step summary lacks %q:\n%s", want, got)
		}
	}

	// Ranked: the broken run first, then the failed contract, then the
	// summary line.
	lines := strings.Split(strings.TrimSpace(commands.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (the broken run, the failed contract, the summary):\n%s", len(lines), commands.String())
	}
	if want := "chaoskit: FAIL: 3 scenarios, 3 contracts: 2 passed, 1 failed, 0 inconclusive"; !strings.HasPrefix(lines[2], want) {
		t.Errorf("summary line:\n got %s\nwant %s…", lines[2], want)
	}
	lines[0], lines[1] = lines[1], lines[0]
	// savedScenario writes its contract at line 18, column 5, and the run
	// directory holds the copy the re-judging reads.
	wantFailed := "::error file=b/scenario.yaml,line=18,col=5,title=chaoskit%3A saved / served from the cache%3A fail::window fault, 100 requests%0A" +
		"fallback >= 95%25: measured 90%25 (90/100), expected >= 95%25 (100 samples); first violation: +0s GET /products/1 -> 200 primary with demo/store/productQuery on"
	if lines[0] != wantFailed {
		t.Errorf("failed contract:\n got %s\nwant %s", lines[0], wantFailed)
	}
	if want := "::error file=c/scenario.yaml,title=chaoskit%3A saved did not complete::the timeline stops short"; !strings.HasPrefix(lines[1], want) {
		t.Errorf("broken run:\n got %s\nwant %s…", lines[1], want)
	}
}

// The step summary never grows past what GitHub shows: the report is cut
// at a line with a note, or left out when there is no room, and a warning
// says so.
func TestStepSummaryBounded(t *testing.T) {
	for _, tt := range []struct {
		name    string
		before  int
		appends bool
	}{
		{"room for part of the report", maxStepSummary - 600, true},
		{"no room", maxStepSummary - 10, false},
		{"full", maxStepSummary, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := twoRuns(t)
			summary := filepath.Join(t.TempDir(), "step_summary")
			before := strings.Repeat("x\n", tt.before/2)
			if err := os.WriteFile(summary, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
			var commands bytes.Buffer
			_, err := Rejudge(root, RejudgeOptions{Formats: []reports.Format{reports.JSON}, GitHub: &GitHub{StepSummary: summary, Commands: &commands}})
			if exitcode.Of(err) != exitcode.Fail {
				t.Fatalf("err = %v, want exit 1", err)
			}
			data, err := os.ReadFile(summary)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > maxStepSummary {
				t.Errorf("step summary holds %d bytes, more than %d", len(data), maxStepSummary)
			}
			added := string(data[len(before):])
			switch {
			case tt.appends && !(strings.HasPrefix(added, "\n## chaoskit: ❌ FAIL") && strings.HasSuffix(added, "the whole report is report.md in the report directory.\n")):
				t.Errorf("appended:\n%s", added)
			case !tt.appends && added != "":
				t.Errorf("appended %q to a full summary", added)
			}
			if !strings.HasPrefix(commands.String(), "::warning title=chaoskit step summary::the ") {
				t.Errorf("no warning:\n%s", commands.String())
			}
		})
	}
}
