package harness

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
)

// GitHub publishes an invocation's report the way a GitHub Actions job
// shows results: the Markdown report appended to the step's summary; the
// maxAnnotations most important shortfalls as workflow commands, which
// GitHub shows as annotations on the contract's line of the scenario file
// (::error for a run that broke or a contract that failed, ::warning for
// one that was inconclusive), then one line that counts them all; and each
// scenario's progress in a group of the log.
type GitHub struct {
	// StepSummary is the file $GITHUB_STEP_SUMMARY names; empty writes no
	// summary.
	StepSummary string
	// Commands receives the workflow commands. The runner reads them from
	// the step's stdout and stderr alike, so chaoskit writes them to
	// stderr when its stdout holds the report JSON.
	Commands io.Writer
	// Workspace is $GITHUB_WORKSPACE, the checkout: an annotation names a
	// file below it relative to it, as GitHub matches files.
	Workspace string
}

// GitHubFromEnv returns the GitHub hooks when getenv("GITHUB_ACTIONS") is
// "true", as on every GitHub Actions runner, with the commands written to
// commands; else nil.
func GitHubFromEnv(getenv func(string) string, commands io.Writer) *GitHub {
	if getenv("GITHUB_ACTIONS") != "true" {
		return nil
	}
	return &GitHub{StepSummary: getenv("GITHUB_STEP_SUMMARY"), Commands: commands, Workspace: getenv("GITHUB_WORKSPACE")}
}

// maxStepSummary is the most a step's summary may hold: GitHub refuses to
// show a larger one at all.
const maxStepSummary = 1 << 20

// maxAnnotations is how many shortfalls become annotations: GitHub shows
// at most 10 error and 10 warning annotations of a step, and drops the
// rest unseen, so chaoskit picks the 10 that matter most (see Ranked) and
// counts the others in its summary line.
const maxAnnotations = 10

// Publish appends rep to the step summary and writes its annotations. Only
// a summary that cannot be written is an error; one already too full for
// the report gets a warning instead.
func (g *GitHub) Publish(rep *reports.Report) error {
	w := g.Commands
	if w == nil {
		w = io.Discard
	}
	var err error
	if g.StepSummary != "" {
		var note string
		if note, err = appendSummary(g.StepSummary, rep); note != "" {
			fmt.Fprintf(w, "::warning title=%s::%s\n", escapeProperty("chaoskit step summary"), escapeData(note))
		}
	}
	sfs := Ranked(Shortfalls(rep))
	for i, sf := range sfs {
		if i == maxAnnotations {
			break
		}
		loc := ""
		if sf.At.Line > 0 {
			loc = fmt.Sprintf(",line=%d,col=%d", sf.At.Line, sf.At.Column)
		}
		level := "error"
		title := "chaoskit: " + sf.Scenario + " did not complete"
		msg := strings.Join(sf.Reasons, "\n")
		if sf.Contract != "" {
			title = fmt.Sprintf("chaoskit: %s / %s: %s", sf.Scenario, sf.Contract, sf.Outcome)
			msg = sf.Window + "\n" + msg
			if sf.Outcome == contract.Inconclusive {
				level = "warning"
			}
		}
		fmt.Fprintf(w, "::%s file=%s%s,title=%s::%s\n", level, escapeProperty(g.path(sf.At.File)), loc, escapeProperty(title), escapeData(msg))
	}
	fmt.Fprintln(w, annotationSummary(rep, len(sfs)))
	return err
}

// annotationSummary is the line after the annotations: the verdict line,
// and how many shortfalls were left unannotated, and where they are.
func annotationSummary(rep *reports.Report, shortfalls int) string {
	line := "chaoskit: " + reports.Summary(rep)
	if shortfalls > maxAnnotations {
		line += fmt.Sprintf("; annotated the %d most important of %d, every one is in the step summary and %s", maxAnnotations, shortfalls, reports.FileMarkdown)
	}
	return line
}

// fold opens a group of the log named title; the function returned
// closes it. GitHub folds a group and does not nest groups.
func (g *GitHub) fold(w io.Writer, _, title string) (end func()) {
	fmt.Fprintf(w, "::group::%s\n", escapeData(title))
	return func() { fmt.Fprintln(w, "::endgroup::") }
}

// path names file as an annotation must: relative to the workspace when
// it lies below it.
func (g *GitHub) path(file string) string {
	return relativePath(g.Workspace, file)
}

// appendSummary appends rep's Markdown report to the summary file, cut at
// a line so that the file stays within maxStepSummary. note says what was
// left out, when something was.
func appendSummary(path string, rep *reports.Report) (note string, err error) {
	var md bytes.Buffer
	if err := reports.WriteMarkdown(&md, rep); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return "", &runner.InfraError{Msg: "cannot append the report to the step summary", Err: err, Fix: "check $GITHUB_STEP_SUMMARY"}
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = &runner.InfraError{Msg: "cannot append the report to the step summary", Err: cerr}
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return "", &runner.InfraError{Msg: "cannot append the report to the step summary", Err: err}
	}
	text := md.Bytes()
	if st.Size() > 0 {
		// A paragraph of its own after what the step wrote before.
		text = append([]byte("\n"), text...)
	}
	room := maxStepSummary - st.Size()
	if int64(len(text)) > room {
		note = fmt.Sprintf("the report is cut short in the step summary, which GitHub keeps to %d KiB; the whole report is %s in the report directory", maxStepSummary>>10, reports.FileMarkdown)
		cut := "\n> " + strings.ToUpper(note[:1]) + note[1:] + ".\n"
		keep := room - int64(len(cut))
		if keep <= 0 {
			return "the step summary is full, so the report is not in it; it is " + reports.FileMarkdown + " in the report directory", nil
		}
		text = text[:keep]
		if i := bytes.LastIndexByte(text, '\n'); i >= 0 {
			text = text[:i+1]
		}
		text = append(text, cut...)
	}
	if _, err := f.Write(text); err != nil {
		return "", &runner.InfraError{Msg: "cannot append the report to the step summary", Err: err}
	}
	return note, nil
}

// escapeData escapes a workflow command's message as GitHub's toolkit
// does (actions/toolkit, packages/core/src/command.ts): %, CR and LF.
func escapeData(s string) string {
	return dataEscaper.Replace(s)
}

// escapeProperty escapes a workflow command's property value: as a
// message, and also ':' and ',', which end a value.
func escapeProperty(s string) string {
	return propertyEscaper.Replace(s)
}

var (
	dataEscaper     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	propertyEscaper = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)
