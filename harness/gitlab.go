package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
)

// codeQualityFile is the Code Quality report a run writes in its report
// directory under GitLab CI; a job names it under artifacts:reports:
// codequality, and GitLab shows its entries in the merge request.
const codeQualityFile = "gl-code-quality-report.json"

// GitLab publishes an invocation's report the way a GitLab CI job shows
// results: each scenario's progress in a collapsible section of the job
// log, and a Code Quality report with an entry for each contract that
// failed or was inconclusive and each run that broke, at its line of the
// scenario file.
type GitLab struct {
	// ProjectDir is $CI_PROJECT_DIR, the checkout: a Code Quality entry
	// names a file below it relative to it, as GitLab matches files.
	ProjectDir string
	// Now stamps the sections; nil means time.Now.
	Now func() time.Time
}

// GitLabFromEnv returns the GitLab hooks when getenv("GITLAB_CI") is
// "true", as on every GitLab runner; else nil.
func GitLabFromEnv(getenv func(string) string) *GitLab {
	if getenv("GITLAB_CI") != "true" {
		return nil
	}
	return &GitLab{ProjectDir: getenv("CI_PROJECT_DIR")}
}

// CodeQualityIssue is one entry of a Code Quality report: the subset of the
// Code Climate issue format GitLab reads (docs.gitlab.com, "Code Quality",
// "Code Quality report format").
type CodeQualityIssue struct {
	Description string              `json:"description"`
	CheckName   string              `json:"check_name"`
	Fingerprint string              `json:"fingerprint"`
	Severity    string              `json:"severity"`
	Location    CodeQualityLocation `json:"location"`
	Categories  []string            `json:"categories,omitempty"`
}

// CodeQualityLocation is where an issue is: a file relative to the project
// and its line (1 when the line is unknown).
type CodeQualityLocation struct {
	Path  string           `json:"path"`
	Lines CodeQualityLines `json:"lines"`
}

// CodeQualityLines holds the line an issue begins on.
type CodeQualityLines struct {
	Begin int `json:"begin"`
}

// CodeQuality lists rep's shortfalls as Code Quality issues, the most
// important first: a broken run is a blocker, a failed contract critical,
// an inconclusive one major. The fingerprint is the same for the same
// scenario, contract and outcome from run to run, so that GitLab tells new
// issues from old ones.
func (g *GitLab) CodeQuality(rep *reports.Report) []CodeQualityIssue {
	out := []CodeQualityIssue{}
	for _, sf := range Ranked(Shortfalls(rep)) {
		severity, check := "critical", "chaoskit/contract-failed"
		switch {
		case sf.Contract == "":
			severity, check = "blocker", "chaoskit/run-broke"
		case sf.Outcome == contract.Inconclusive:
			severity, check = "major", "chaoskit/contract-inconclusive"
		}
		title := sf.Scenario + " did not complete"
		if sf.Contract != "" {
			title = fmt.Sprintf("%s / %s: %s", sf.Scenario, sf.Contract, sf.Outcome)
		}
		desc := "chaoskit: " + title + ": " + strings.Join(sf.Reasons, "; ")
		if sf.Window != "" {
			desc += " (" + sf.Window + ")"
		}
		sum := sha256.Sum256([]byte(strings.Join([]string{check, sf.Scenario, sf.Contract, string(sf.Outcome)}, "\x00")))
		out = append(out, CodeQualityIssue{
			Description: desc, CheckName: check, Fingerprint: hex.EncodeToString(sum[:16]), Severity: severity,
			Location:   CodeQualityLocation{Path: relativePath(g.ProjectDir, sf.At.File), Lines: CodeQualityLines{Begin: max(sf.At.Line, 1)}},
			Categories: []string{"Bug Risk"},
		})
	}
	return out
}

// Publish writes rep's Code Quality report in dir.
func (g *GitLab) Publish(dir string, rep *reports.Report) error {
	data, err := json.MarshalIndent(g.CodeQuality(rep), "", "  ")
	if err != nil {
		return err
	}
	if err := outdir.WriteBytes(filepath.Join(dir, codeQualityFile), append(data, '\n')); err != nil {
		return &runner.InfraError{Msg: "cannot write the Code Quality report", Err: err}
	}
	return nil
}

// fold opens a collapsible section of the job log named after name, with
// title as its header, collapsed; the function returned closes it
// (docs.gitlab.com, "Custom collapsible sections").
func (g *GitLab) fold(w io.Writer, name, title string) (end func()) {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	id := sectionName(name)
	fmt.Fprintf(w, "\x1b[0Ksection_start:%d:%s[collapsed=true]\r\x1b[0K%s\n", now().Unix(), id, title)
	return func() { fmt.Fprintf(w, "\x1b[0Ksection_end:%d:%s\r\x1b[0K\n", now().Unix(), id) }
}

// sectionName makes name a section name GitLab takes: letters, digits, _,
// . and - only.
func sectionName(name string) string {
	return "chaoskit_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, name)
}

// relativePath names file relative to base when it lies below it, with /
// as the separator, as CI systems match files.
func relativePath(base, file string) string {
	if base == "" {
		return filepath.ToSlash(file)
	}
	abs, err1 := filepath.Abs(file)
	ws, err2 := filepath.Abs(base)
	if err1 != nil || err2 != nil {
		return file
	}
	rel, err := filepath.Rel(ws, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return file
	}
	return filepath.ToSlash(rel)
}
