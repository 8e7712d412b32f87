package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/scenarios"
	"github.com/chaoskit/chaoskit/timeline"
)

const (
	formatsFlagDefault = "table,json"
	formatsFlagUsage   = "reports to write, comma-separated: table, json, junit, markdown, html"
)

type reportFlags struct {
	reportDir string
	formats   string
	scenario  string
}

func newReportCmd() *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Judge and report a saved run again, without re-running it",
		Long: `Report judges runs saved on disk again and writes their reports, without
starting a service or sending a request. RUN_DIR is a run directory (it holds
timeline.jsonl) or any directory above run directories, such as the
--report-dir of an earlier chaoskit run.

The scenario is read again, so contracts edited since the run are judged as
they are now: the scenario file the run was made from when it is still
there, else the copy saved in the run directory (scenario.yaml), else the
bundled scenario of the same name. --scenario names another file.`,
		Example: `  chaoskit report out
  chaoskit report out/db-timeout-serves-cache --format table,html --report-dir review`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return reportRuns(cmd.OutOrStdout(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "", "directory for the report files (default RUN_DIR)")
	cmd.Flags().StringVar(&f.formats, "format", formatsFlagDefault, formatsFlagUsage)
	cmd.Flags().StringVar(&f.scenario, "scenario", "", "judge with this scenario file instead (one run only)")
	return cmd
}

func reportRuns(out io.Writer, root string, f reportFlags) error {
	formats, err := reports.ParseFormats(f.formats)
	if err != nil {
		return usageError("--format: %v", err)
	}
	runs, err := findRuns(root)
	if err != nil {
		return err
	}
	if f.scenario != "" && len(runs) > 1 {
		return usageError("--scenario judges one run, and %s holds %d", root, len(runs))
	}
	dir := f.reportDir
	if dir == "" {
		dir = root
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &runner.InfraError{Msg: "cannot create the report directory", Err: err}
	}
	var reps []reports.ScenarioReport
	var started, ended time.Time
	for _, run := range runs {
		tl, err := timeline.ReadFile(filepath.Join(run, timeline.FileName))
		if err != nil {
			return usageError("%v", err)
		}
		sc, from, err := rereadScenario(run, tl, f.scenario)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s (%s, judged with %s)\n", sc.Name, run, from)
		rep := reports.ScenarioReport{Name: sc.Name, File: sc.File, RunDir: runDirFrom(dir, run)}
		judge(&rep, sc, tl)
		runErr := recordedError(tl)
		if runErr != nil {
			rep.Error = runErr.Error()
		}
		rep.Verdict = reports.ScenarioVerdict(rep.Contracts, runErr)
		reps = append(reps, rep)
		start, end := runSpan(tl)
		if started.IsZero() || start.Before(started) {
			started = start
		}
		if end.After(ended) {
			ended = end
		}
	}
	rep := reports.New(started, reps)
	rep.Duration = ended.Sub(started)
	fmt.Fprintln(out)
	if err := writeReports(out, dir, rep, formats); err != nil {
		return err
	}
	if rep.Verdict != contract.Pass {
		return &exitError{code: exitFail, err: errContractsFailed}
	}
	return nil
}

// findRuns returns the run directories at or below root: those holding a
// timeline, in name order.
func findRuns(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return nil, usageError("%s is not a directory (give a run directory or one above run directories)", root)
	}
	var runs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if _, err := os.Stat(filepath.Join(path, timeline.FileName)); err == nil {
			runs = append(runs, path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, &runner.InfraError{Msg: "cannot read " + root, Err: err}
	}
	if len(runs) == 0 {
		return nil, usageError("no runs in %s: no %s at or below it", root, timeline.FileName)
	}
	sort.Strings(runs)
	return runs, nil
}

// runDirFrom names run as seen from the report directory: relative when
// it lies below it, else absolute.
func runDirFrom(dir, run string) string {
	absDir, err1 := filepath.Abs(dir)
	absRun, err2 := filepath.Abs(run)
	if err1 != nil || err2 != nil {
		return run
	}
	if rel, err := filepath.Rel(absDir, absRun); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return absRun
}

// rereadScenario loads the scenario to judge a run with, and says where it
// came from.
func rereadScenario(run string, tl *timeline.Timeline, override string) (*scenarios.Scenario, string, error) {
	// Judged as run: with the variable values and rate scale the run used.
	// The load is not sent again, so request bodies are not needed.
	opts := scenarios.Options{Vars: tl.Meta.Vars, RateScale: tl.Meta.RateScale, SkipBodyFiles: true}
	load := func(path string) (*scenarios.Scenario, error) { return scenarios.LoadFile(path, opts) }
	var candidates []string
	if override != "" {
		candidates = []string{override}
	} else if tl.Meta.File != "" {
		candidates = append(candidates, tl.Meta.File)
	}
	for _, path := range candidates {
		if _, err := os.Stat(path); err != nil {
			if override != "" {
				return nil, "", usageError("--scenario %s: no such file", path)
			}
			continue
		}
		sc, err := load(path)
		return sc, path, err
	}
	if override == "" {
		copyPath := filepath.Join(run, scenarios.CopyFile)
		candidates = append(candidates, copyPath)
		if _, err := os.Stat(copyPath); err == nil {
			sc, err := scenarios.LoadCopy(run, opts)
			return sc, copyPath, err
		}
	}
	scs, err := scenarios.Bundled(opts)
	if err == nil {
		for _, sc := range scs {
			if sc.Name == tl.Meta.Scenario {
				return sc, "the bundled scenario " + sc.File, nil
			}
		}
	}
	return nil, "", usageError("%s: cannot find the scenario %q was run from (tried %s); name it with --scenario", run, tl.Meta.Scenario, strings.Join(candidates, ", "))
}

// recordedError is the error the run ended with, as its timeline records
// it: the run_end message unless the run completed, or a note that the
// record stops short.
func recordedError(tl *timeline.Timeline) error {
	if !tl.Complete {
		return errors.New("the timeline stops short: the recording process was killed")
	}
	for i := len(tl.Events) - 1; i >= 0; i-- {
		if e := tl.Events[i]; e.Kind == timeline.RunEnd {
			if e.Message != "" && e.Message != "completed" {
				return errors.New(e.Message)
			}
			return nil
		}
	}
	return nil
}

// runSpan is when a recorded run started and ended.
func runSpan(tl *timeline.Timeline) (time.Time, time.Time) {
	start, end := tl.Meta.Start, tl.Meta.Start
	for _, e := range tl.Events {
		if start.IsZero() || e.Time.Before(start) {
			start = e.Time
		}
		if e.Time.After(end) {
			end = e.Time
		}
	}
	return start, end
}

// judge evaluates a scenario's contracts over a recorded timeline and adds
// the verdicts and the run's figures to rep. The contracts compiled when
// the scenario loaded, so a compile error here cannot happen.
func judge(rep *reports.ScenarioReport, sc *scenarios.Scenario, tl *timeline.Timeline) {
	for _, c := range sc.Contracts {
		cc, err := contract.Compile(c.Spec())
		if err != nil {
			rep.Contracts = append(rep.Contracts, contract.Verdict{Name: c.Name, Phase: c.Phase, Outcome: contract.Inconclusive, Reason: err.Error()})
			continue
		}
		rep.Contracts = append(rep.Contracts, cc.Evaluate(tl))
	}
	rep.AddMeasurement(contract.Measure(tl, sc.Classification()))
}

// writeReports writes the reports and names the files written.
func writeReports(out io.Writer, dir string, rep *reports.Report, formats []reports.Format) error {
	paths, err := reports.Write(dir, out, rep, formats, reports.Options{Table: reports.TableOptions{Color: colorOK(out), Dir: dir}})
	if err != nil {
		return &runner.InfraError{Msg: "cannot write the reports", Err: err}
	}
	for _, p := range paths {
		fmt.Fprintf(out, "report: %s\n", p)
	}
	return nil
}
