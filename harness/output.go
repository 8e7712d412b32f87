package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/termline"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

// OutputMode is what a run or a re-judging prints as its result, and
// where: Options.Out and RejudgeOptions.Out receive the progress, Results
// the result when it is printed apart (chaoskit's stdout, with Out then
// its stderr). The report files are written as the formats say in every
// mode.
type OutputMode int

const (
	// OutputText prints everything on Out: the progress, then the table
	// (when the formats hold it) with the verdict line, and the names of
	// the report files written. Results is not used.
	OutputText OutputMode = iota
	// OutputJSON prints the report on Results as one JSON document in
	// report.json's schema, and nothing else there; the progress, the
	// table and the files' names go to Out.
	OutputJSON
	// OutputQuiet prints the verdict line (reports.Summary) on Results and
	// nothing on Out.
	OutputQuiet
)

// output is where an invocation prints, as its options say.
type output struct {
	progress io.Writer
	results  io.Writer
	mode     OutputMode
	color    bool
	width    int
	github   *GitHub
	gitlab   *GitLab
}

func newOutput(out, results io.Writer, mode OutputMode, color bool, width int, gh *GitHub, gl *GitLab) output {
	if out == nil || mode == OutputQuiet {
		out = io.Discard
	}
	if results == nil {
		results = io.Discard
	}
	return output{progress: out, results: results, mode: mode, color: color, width: width, github: gh, gitlab: gl}
}

// fold starts a scenario's part of the progress, titled title: a
// collapsible section of the CI job's log under GitHub Actions or GitLab
// CI, else the title alone on a line. The function returned ends it.
func (o output) fold(name, title string) (end func()) {
	switch {
	case o.progress == io.Discard:
		return func() {}
	case o.github != nil:
		return o.github.fold(o.progress, name, title)
	case o.gitlab != nil:
		return o.gitlab.fold(o.progress, name, title)
	}
	for _, row := range termline.Wrap(title, o.width, "  ") {
		fmt.Fprintln(o.progress, row)
	}
	return func() {}
}

// finish writes the report files in dir, prints the result as the mode
// says and publishes the report to GitHub Actions when it runs there. The
// result is printed even when a file could not be written; the first
// failure is returned.
func (o output) finish(dir string, rep *reports.Report, formats []reports.Format) error {
	if o.mode == OutputQuiet {
		// Nobody reads the table.
		formats = slices.DeleteFunc(slices.Clone(formats), func(f reports.Format) bool { return f == reports.Table })
	}
	errs := []error{writeReports(o.progress, dir, rep, formats, o.color, o.width)}
	switch o.mode {
	case OutputJSON:
		if err := reports.WriteJSON(o.results, rep); err != nil {
			errs = append(errs, exitcode.Wrap(exitcode.Infra, fmt.Errorf("cannot print the report: %w", err)))
		}
	case OutputQuiet:
		fmt.Fprintln(o.results, reports.Summary(rep))
	}
	if o.github != nil {
		errs = append(errs, o.github.Publish(rep))
	}
	if o.gitlab != nil {
		errs = append(errs, o.gitlab.Publish(dir, rep))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ErrorReport is what `-o json` prints instead of a report when the
// invocation made none: its scenarios did not load, a flag was wrong, or
// the report directory could not be claimed. Consumers tell it from a
// report by its error field (see docs/report-schema.md).
type ErrorReport struct {
	SchemaVersion int    `json:"schema_version"`
	Error         string `json:"error"`
	ExitCode      int    `json:"exit_code"`
	// Problems are the scenario errors, each at its position, when the
	// input was invalid.
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is one error in a scenario file.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// WriteErrorJSON prints err as an ErrorReport, one JSON document.
func WriteErrorJSON(w io.Writer, err error) error {
	r := ErrorReport{SchemaVersion: reports.SchemaVersion, Error: err.Error(), ExitCode: exitcode.Of(err)}
	var list plan.ErrorList
	var one *plan.Error
	switch {
	case errors.As(err, &list):
	case errors.As(err, &one):
		list = plan.ErrorList{one}
	}
	for _, e := range list {
		r.Problems = append(r.Problems, Problem{File: e.File, Line: e.Line, Column: e.Col, Message: e.Msg, Hint: e.Hint})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
