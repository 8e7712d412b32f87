package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/scenarios"
)

type runFlags struct {
	reportDir string
	bundled   bool
	formats   string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [SCENARIO|DIR]...",
		Short: "Run scenarios and judge their contracts",
		Long: `Run loads the scenarios (files, or directories of *.yaml), validates them,
and runs each: start the target, drive load phase by phase with the phase's
faults on, then judge the contracts. Every fault is switched off again on
every way out, Ctrl-C included.

Writes one run directory per scenario below DIR, and the reports --format
names: the table to the terminal, report.json, junit.xml, report.md and
report.html to DIR.`,
		Example: `  chaoskit run scenarios/ --report-dir out
  chaoskit run scenarios/ --format table,json,junit,markdown,html
  chaoskit run --bundled`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenarios(cmd.Context(), cmd.OutOrStdout(), args, f)
		},
	}
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "out", "directory for report.json and the run directories")
	cmd.Flags().BoolVar(&f.bundled, "bundled", false, "run the scenarios embedded in chaoskit (they target the demo service)")
	cmd.Flags().StringVar(&f.formats, "format", formatsFlagDefault, formatsFlagUsage)
	return cmd
}

func loadScenarios(args []string, bundled bool) ([]*scenarios.Scenario, error) {
	opts := scenarios.Options{Catalog: targetCatalog}
	switch {
	case bundled && len(args) > 0:
		return nil, usageError("give scenario files or --bundled, not both")
	case bundled:
		return scenarios.Bundled(opts)
	case len(args) == 0:
		return nil, usageError("no scenarios given: chaoskit run FILE|DIR... (or --bundled)")
	}
	return scenarios.LoadAll(args, opts)
}

func runScenarios(ctx context.Context, out io.Writer, args []string, f runFlags) error {
	formats, err := reports.ParseFormats(f.formats)
	if err != nil {
		return usageError("--format: %v", err)
	}
	scs, err := loadScenarios(args, f.bundled)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return &runner.InfraError{Msg: "cannot find the chaoskit executable", Err: err}
	}
	if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
		return &runner.InfraError{Msg: "cannot create the report directory", Err: err}
	}
	started := time.Now()
	var reps []reports.ScenarioReport
	var runErr error
	for _, sc := range scs {
		fmt.Fprintf(out, "%s (%s)\n", sc.Name, sc.File)
		dir := filepath.Join(f.reportDir, sc.Name)
		res, err := runner.Run(ctx, sc, runner.Options{Self: self, Dir: dir, Log: out, Tool: version})
		rep := reports.ScenarioReport{Name: sc.Name, File: sc.File, RunDir: sc.Name}
		if res != nil {
			judge(&rep, sc, res.Timeline)
		}
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Verdict = reports.ScenarioVerdict(rep.Contracts, err)
		reps = append(reps, rep)
		if err != nil {
			runErr = err
			break
		}
	}
	rep := reports.New(started, reps)
	fmt.Fprintln(out)
	if err := writeReports(out, f.reportDir, rep, formats); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if rep.Verdict != contract.Pass {
		return &exitError{code: exitFail, err: errContractsFailed}
	}
	return nil
}

// colorOK says whether to paint output: only on a terminal, never with
// NO_COLOR set (https://no-color.org).
func colorOK(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
