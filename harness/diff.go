package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/diff"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/internal/outdir"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
)

// ErrRegressed is the error of a diff in which a gated figure of the head
// regressed beyond noise (exit code 1); the reports say which.
var ErrRegressed error = &exitcode.Error{Code: exitcode.Fail, Err: errors.New("the head regressed")}

// DiffReportOptions say what a diff writes once its runs are judged.
type DiffReportOptions struct {
	// Compare tunes the comparison; its Gate names the figures whose
	// regression fails the diff.
	Compare diff.Options
	// Formats are the reports: the table to Table, diff.json, diff.md and
	// diff.html to the report directory. JUnit has no diff form.
	Formats []reports.Format
	// Table receives the table (and the names of the files written);
	// nil means DiffOptions.Out.
	Table io.Writer
	// JSON, when set, receives the comparison as one JSON document.
	JSON io.Writer
}

// Diff runs the scenarios against both sides (RunDiff), compares the
// runs (package diff) and writes the reports. The error carries the exit
// code: ErrRegressed (1) when a gated figure regressed beyond noise, a
// run's error (3) when a run failed, exit 2 for invalid input. The result
// is returned whenever the runs were compared.
func Diff(ctx context.Context, scs []*plan.Scenario, opts DiffOptions, ro DiffReportOptions) (*diff.Result, error) {
	for _, f := range ro.Formats {
		if f == reports.JUnit {
			return nil, exitcode.New(exitcode.Invalid, "--format junit: a diff has no JUnit form; give table, json, markdown or html")
		}
	}
	if _, err := diff.Compare([]diff.Run{{}}, []diff.Run{{}}, ro.Compare); err != nil {
		return nil, exitcode.Wrap(exitcode.Invalid, err) // a malformed gate, before any run
	}
	runs, release, err := RunDiff(ctx, scs, opts)
	if release != nil {
		defer release()
	}
	if err != nil {
		return nil, err
	}
	var base, head []diff.Run
	for _, ds := range runs {
		for _, r := range ds.Base {
			base = append(base, diff.FromReport(r.Report))
		}
		for _, r := range ds.Head {
			head = append(head, diff.FromReport(r.Report))
		}
	}
	res, err := diff.Compare(base, head, ro.Compare)
	if err != nil {
		return nil, exitcode.Wrap(exitcode.Invalid, err)
	}
	table := ro.Table
	if table == nil {
		table = opts.Out
	}
	if table == nil {
		table = io.Discard
	}
	base1, head1 := comparedSides(runs, opts)
	writeHTML := func(w io.Writer) error { return res.WriteHTML(w, base1, head1) }
	if err := writeDiffReports(opts.ReportDir, table, opts.Width, res, writeHTML, ro); err != nil {
		return res, err
	}
	if g := unmatchedGate(res, ro.Compare.Gate); g != "" {
		// A misspelled gate would gate nothing, and pass every diff.
		return res, exitcode.New(exitcode.Invalid, "--gate %s names no figure of this diff: give a figure's name (p99, share.fallback, status.5xx, bill.failed, verdict, …; diff.json lists them) or a glob of them", g)
	}
	if res.Regressed() {
		return res, ErrRegressed
	}
	return res, nil
}

// unmatchedGate returns the first gate that matches no figure's name.
func unmatchedGate(res *diff.Result, gates []string) string {
	for _, g := range gates {
		matched := false
		for _, f := range res.Figures {
			if ok, _ := path.Match(g, f.Name); ok {
				matched = true
				break
			}
		}
		if !matched {
			return g
		}
	}
	return ""
}

// comparedSides are the sides as the HTML page shows them: each side's
// first run of every scenario, on the run report's page.
func comparedSides(runs []DiffScenario, opts DiffOptions) (base, head reports.ComparedSide) {
	var bs, hs []reports.ScenarioReport
	var started time.Time
	for _, ds := range runs {
		if len(ds.Base) > 0 {
			bs = append(bs, ds.Base[0].Report)
			if started.IsZero() {
				started = ds.Base[0].Report.Start
			}
		}
		if len(ds.Head) > 0 {
			hs = append(hs, ds.Head[0].Report)
		}
	}
	n := opts.Runs
	if n == 0 {
		n = DefaultDiffRuns
	}
	label := func(s Side, name string) string {
		s.Name = name
		return fmt.Sprintf("%s: run 1 of %d", s, n)
	}
	base = reports.ComparedSide{Name: "base", Label: label(opts.Base, "base"), Report: reports.New(started, bs)}
	head = reports.ComparedSide{Name: "head", Label: label(opts.Head, "head"), Report: reports.New(started, hs)}
	return base, head
}

// writeDiffReports writes res in the formats ro names; writeHTML writes
// its page.
func writeDiffReports(dir string, table io.Writer, width int, res *diff.Result, writeHTML func(io.Writer) error, ro DiffReportOptions) error {
	files := map[reports.Format]struct {
		name  string
		write func(io.Writer) error
	}{
		reports.JSON:     {DiffFileJSON, res.WriteJSON},
		reports.Markdown: {DiffFileMarkdown, res.WriteMarkdown},
		reports.HTML:     {DiffFileHTML, writeHTML},
	}
	var written []string
	for _, f := range ro.Formats {
		if f == reports.Table {
			fmt.Fprintln(table)
			if err := res.WriteTable(table, width); err != nil {
				return &runner.InfraError{Msg: "cannot print the table", Err: err}
			}
			continue
		}
		file, ok := files[f]
		if !ok {
			continue
		}
		path := filepath.Join(dir, file.name)
		if err := outdir.WriteFile(path, file.write); err != nil {
			return &runner.InfraError{Msg: "cannot write the diff's reports", Err: err}
		}
		written = append(written, path)
	}
	for _, p := range written {
		reports.WriteWrapped(table, "report: "+p, width)
	}
	if ro.JSON != nil {
		if err := res.WriteJSON(ro.JSON); err != nil {
			return &runner.InfraError{Msg: "cannot print the diff", Err: err}
		}
	}
	return nil
}
