package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/timeline"
)

// manyFailures saves a run whose scenario has n contracts, every one of
// which fails (90% served from the cache, 95% expected), at lines 18, 22, …
func manyFailures(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "many")
	saveRunWith(t, dir, timeline.Meta{}, true)
	head, _, _ := strings.Cut(savedScenario, "contracts:\n")
	var b strings.Builder
	b.WriteString(head + "contracts:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: cache %02d\n    phase: fault\n    expect:\n      - fallback >= 95%%\n", i+1)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// Under GitHub Actions, a run with 30 failing contracts prints the 10 most
// important as annotations and one summary line, not 30 annotations of
// which GitHub would show 10 picked by nobody.
func TestGitHubAnnotationsRankedAndCapped(t *testing.T) {
	root := manyFailures(t, 30)
	var out, commands bytes.Buffer
	_, err := Rejudge(root, RejudgeOptions{Out: &out, Formats: []reports.Format{reports.JSON},
		GitHub: &GitHub{Commands: &commands, Workspace: root}})
	if exitcode.Of(err) != exitcode.Fail {
		t.Fatalf("err = %v, want exit 1", err)
	}
	var annotations, summaries int
	for _, line := range strings.Split(strings.TrimSpace(commands.String()), "\n") {
		switch {
		case strings.HasPrefix(line, "::error ") || strings.HasPrefix(line, "::warning "):
			annotations++
		case strings.HasPrefix(line, "chaoskit: FAIL: 1 scenarios, 30 contracts: 0 passed, 30 failed"):
			summaries++
			if !strings.Contains(line, "annotated the 10 most important of 30") {
				t.Errorf("the summary line does not say what was left out: %s", line)
			}
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	if annotations != maxAnnotations || summaries != 1 {
		t.Errorf("%d annotations and %d summary lines, want %d and 1:\n%s", annotations, summaries, maxAnnotations, commands.String())
	}
	if !strings.Contains(commands.String(), "::error file=many/scenario.yaml,line=18,col=5,title=chaoskit%3A saved / cache 01%3A fail::") {
		t.Errorf("the first failing contract is not the first annotation:\n%s", commands.String())
	}
}

// rankedReport is a report with, in this order, an inconclusive contract,
// a failed one and a run that broke.
func rankedReport() *reports.Report {
	at := func(line int) contract.Position { return contract.Position{File: "/w/s.yaml", Line: line, Column: 5} }
	return reports.New(time.Now(), []reports.ScenarioReport{
		{Name: "a", File: "/w/s.yaml", Contracts: []contract.Verdict{
			{Name: "unsure", Outcome: contract.Inconclusive, Reason: "3 requests in the window, fewer than 20", Position: at(10)},
			{Name: "broken", Outcome: contract.Fail, Measured: "90%", Expected: ">= 95%", Position: at(20)},
		}},
		{Name: "b", File: "/w/t.yaml", Error: "the target exited", Verdict: contract.Fail},
	})
}

// The broken run comes first, then the failed contract, then the
// inconclusive one, which is a warning, not an error.
func TestGitHubRanksBrokenRunsFailuresThenInconclusive(t *testing.T) {
	var commands bytes.Buffer
	g := &GitHub{Commands: &commands, Workspace: "/w"}
	if err := g.Publish(rankedReport()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(commands.String()), "\n")
	want := []string{
		"::error file=t.yaml,title=chaoskit%3A b did not complete::the target exited",
		"::error file=s.yaml,line=20,col=5,title=chaoskit%3A a / broken%3A fail::",
		"::warning file=s.yaml,line=10,col=5,title=chaoskit%3A a / unsure%3A inconclusive::",
		"chaoskit: FAIL: 2 scenarios, 2 contracts: 0 passed, 1 failed, 1 inconclusive",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), commands.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got %s\nwant %s…", i+1, lines[i], w)
		}
	}
}

// Each scenario's progress is a group of the log under GitHub Actions and
// a collapsible section under GitLab CI.
func TestCIFoldsEachScenario(t *testing.T) {
	var b bytes.Buffer
	o := newOutput(&b, nil, OutputText, false, 0, &GitHub{}, nil)
	end := o.fold("db-timeout", "db-timeout (s.yaml) [1/2]")
	fmt.Fprintln(&b, "  warmup …")
	end()
	if want := "::group::db-timeout (s.yaml) [1/2]\n  warmup …\n::endgroup::\n"; b.String() != want {
		t.Errorf("GitHub:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	now := func() time.Time { return time.Unix(1700000000, 0) }
	o = newOutput(&b, nil, OutputText, false, 0, nil, &GitLab{Now: now})
	end = o.fold("db timeout", "db timeout (s.yaml) [1/2]")
	end()
	if want := "\x1b[0Ksection_start:1700000000:chaoskit_db_timeout[collapsed=true]\r\x1b[0Kdb timeout (s.yaml) [1/2]\n\x1b[0Ksection_end:1700000000:chaoskit_db_timeout\r\x1b[0K\n"; b.String() != want {
		t.Errorf("GitLab:\n%q\nwant\n%q", b.String(), want)
	}
	b.Reset()
	o = newOutput(&b, nil, OutputText, false, 0, nil, nil)
	o.fold("x", "x (s.yaml) [1/1]")()
	if b.String() != "x (s.yaml) [1/1]\n" {
		t.Errorf("outside CI: %q", b.String())
	}
}

func TestGitLabFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if g := GitLabFromEnv(env(nil)); g != nil {
		t.Errorf("outside GitLab CI: %+v", g)
	}
	if g := GitLabFromEnv(env(map[string]string{"GITLAB_CI": "true", "CI_PROJECT_DIR": "/builds/p"})); g == nil || g.ProjectDir != "/builds/p" {
		t.Errorf("under GitLab CI: %+v", g)
	}
}

// Under GitLab CI a re-judging writes a Code Quality report that GitLab's
// format accepts (validated against the schema of its documented format),
// one entry per shortfall with a fingerprint of its own, at the contract's
// line relative to the project.
func TestGitLabCodeQualityReport(t *testing.T) {
	root := manyFailures(t, 30)
	saveRun(t, filepath.Join(root, "cut"), "85", false) // a run that broke
	_, err := Rejudge(root, RejudgeOptions{Formats: []reports.Format{reports.JSON}, GitLab: &GitLab{ProjectDir: root}})
	if exitcode.Of(err) != exitcode.Fail {
		t.Fatalf("err = %v, want exit 1", err)
	}
	data, err := os.ReadFile(filepath.Join(root, codeQualityFile))
	if err != nil {
		t.Fatal(err)
	}
	validateCodeQuality(t, data)
	var issues []CodeQualityIssue
	if err := json.Unmarshal(data, &issues); err != nil {
		t.Fatal(err)
	}
	if len(issues) != 31 {
		t.Fatalf("%d issues, want 31", len(issues))
	}
	if i := issues[0]; i.Severity != "blocker" || i.Location.Path != "cut/scenario.yaml" || i.Location.Lines.Begin != 1 {
		t.Errorf("first issue %+v, want the broken run", i)
	}
	if i := issues[1]; i.Severity != "critical" || i.Location.Path != "many/scenario.yaml" || i.Location.Lines.Begin != 18 || !strings.Contains(i.Description, "cache 01: fail") {
		t.Errorf("second issue %+v, want the first failed contract", i)
	}
	seen := map[string]bool{}
	for _, i := range issues {
		if seen[i.Fingerprint] {
			t.Errorf("fingerprint %s twice", i.Fingerprint)
		}
		seen[i.Fingerprint] = true
	}
	g := &GitLab{ProjectDir: "/w"}
	cq := g.CodeQuality(rankedReport())
	if len(cq) != 3 || cq[2].Severity != "major" || cq[2].Location.Path != "s.yaml" || cq[2].Location.Lines.Begin != 10 {
		t.Errorf("inconclusive: %+v", cq)
	}
	again := g.CodeQuality(rankedReport())
	if again[1].Fingerprint != cq[1].Fingerprint {
		t.Error("the same shortfall got another fingerprint")
	}
	empty, _ := json.Marshal(g.CodeQuality(reports.New(time.Now(), nil)))
	validateCodeQuality(t, empty)
}

// validateCodeQuality validates a Code Quality report against the schema
// of GitLab's format.
func validateCodeQuality(t *testing.T, data []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	sch, err := c.Compile(filepath.Join("testdata", "gitlab-codequality.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("GitLab's Code Quality schema refuses the report: %v\n%s", err, data)
	}
}

// A run of several scenarios says how far along it is and when it should
// end, at the pace of the scenarios done so far: in each scenario's title
// and at the end of the live line.
func TestOverallProgress(t *testing.T) {
	sc := func(phases ...time.Duration) *plan.Scenario {
		s := &plan.Scenario{}
		for _, d := range phases {
			s.Phases = append(s.Phases, plan.Phase{Duration: plan.Duration(d)})
		}
		return s
	}
	t0 := time.Unix(1700000000, 0)
	o := newOverall([]*plan.Scenario{sc(10 * time.Second), sc(5*time.Second, 5*time.Second), sc(20 * time.Second)}, t0)
	for _, tt := range []struct {
		i       int
		elapsed time.Duration
		want    string
	}{
		{0, 0, "1/3"},
		// 10s planned took 12s: the 30s left take 36s.
		{1, 12 * time.Second, "2/3, 25% done, about 36s left"},
		{2, 24 * time.Second, "3/3, 50% done, about 24s left"},
	} {
		if got := o.at(tt.i, t0.Add(tt.elapsed)); got != tt.want {
			t.Errorf("at(%d, +%v) = %q, want %q", tt.i, tt.elapsed, got, tt.want)
		}
	}
	if got := newOverall([]*plan.Scenario{sc(time.Second)}, t0).at(0, t0); got != "1/1" {
		t.Errorf("one scenario: %q", got)
	}
	// The live line: the current scenario's phases in real time, the rest
	// at the pace of those before it (none before: as planned).
	for _, tt := range []struct {
		i           int
		began, done time.Duration
		want        string
	}{
		{0, 0, 0, "1/3, 40s left"},
		{0, time.Second, 4 * time.Second, "1/3, 36s left"},
		// 10s planned took 12s: 6s of phases left here, then 20s × 1.2.
		{1, 12 * time.Second, 4 * time.Second, "2/3, 30s left"},
		{2, 24 * time.Second, 19500 * time.Millisecond, "3/3, 1s left"},
		// Past its plan (a slow read-back): nothing left of it.
		{2, 24 * time.Second, 25 * time.Second, "3/3, 0s left"},
		// Scenarios that ran faster than planned do not make the rest faster.
		{1, 5 * time.Second, 0, "2/3, 30s left"},
	} {
		if got := o.live(tt.i, tt.done, t0.Add(tt.began)); got != tt.want {
			t.Errorf("live(%d, %v, +%v) = %q, want %q", tt.i, tt.done, tt.began, got, tt.want)
		}
	}
	if got := newOverall([]*plan.Scenario{sc(time.Minute)}, t0).live(0, 15*time.Second, t0); got != "45s left" {
		t.Errorf("one scenario, live: %q", got)
	}
}
