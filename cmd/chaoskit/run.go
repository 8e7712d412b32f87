package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/demo"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
	"github.com/chaoskit/chaoskit/scenarios"
)

type runFlags struct {
	reportDir string
	bundled   bool
	formats   string
	load      loadFlags
	only      []string
	keepGoing bool
}

// loadFlags are the flags that change how scenarios load, shared by run and
// validate.
type loadFlags struct {
	vars      []string
	rateScale float64
}

func (l *loadFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&l.vars, "var", nil, "set a scenario variable: --var NAME=VALUE (repeatable); overrides the scenario's vars")
	cmd.Flags().Float64Var(&l.rateScale, "rate-scale", 1, "multiply every rate of every scenario by F (e.g. 0.1 for a quick smoke run)")
}

func (l *loadFlags) options() (scenarios.Options, error) {
	opts := scenarios.Options{Catalog: targetCatalog, DemoArgs: demo.CheckArgs}
	if l.rateScale <= 0 {
		return opts, usageError("--rate-scale %v: give a factor above 0, such as 0.5 or 2", l.rateScale)
	}
	if l.rateScale != 1 {
		opts.RateScale = l.rateScale
	}
	for _, v := range l.vars {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return opts, usageError("--var %q: write --var NAME=VALUE", v)
		}
		if opts.Vars == nil {
			opts.Vars = map[string]string{}
		}
		opts.Vars[name] = value
	}
	return opts, nil
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

Writes one run directory per scenario below DIR (the scenario as loaded,
the timeline, the vegeta results for go tool vegeta report
DIR/NAME/results.bin, the target's output, the fault record and run.json),
and the reports --format names: the table to the terminal, report.json,
junit.xml, report.md and report.html to DIR.

A scenario whose run fails for a reason of the harness or the target (exit
3) stops the invocation unless --keep-going is given.`,
		Example: `  chaoskit run scenarios/ --report-dir out
  chaoskit run scenarios/ --only db-timeout-serves-cache --rate-scale 0.5
  chaoskit run checkout.yaml --var rate=500/s
  chaoskit run scenarios/ --format table,json,junit,markdown,html
  chaoskit run --bundled`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenarios(cmd.Context(), cmd.OutOrStdout(), args, f)
		},
	}
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "out", "directory for report.json and the run directories")
	cmd.Flags().BoolVar(&f.bundled, "bundled", false, "run the scenarios embedded in chaoskit (they target the demo service)")
	cmd.Flags().StringVar(&f.formats, "format", formatsFlagDefault, formatsFlagUsage)
	cmd.Flags().StringArrayVar(&f.only, "only", nil, "run only the scenario with this name (repeatable)")
	cmd.Flags().BoolVar(&f.keepGoing, "keep-going", false, "go on with the next scenario after one could not run")
	f.load.register(cmd)
	return cmd
}

func loadScenarios(args []string, bundled bool, lf loadFlags) ([]*scenarios.Scenario, error) {
	opts, err := lf.options()
	if err != nil {
		return nil, err
	}
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

// selectScenarios keeps the scenarios --only names, in their load order.
func selectScenarios(scs []*scenarios.Scenario, only []string) ([]*scenarios.Scenario, error) {
	if len(only) == 0 {
		return scs, nil
	}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []*scenarios.Scenario
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
		if want[sc.Name] {
			out = append(out, sc)
			delete(want, sc.Name)
		}
	}
	for _, n := range only {
		if want[n] {
			return nil, usageError("--only %s: no scenario has that name (%s)", n, scenarios.DidYouMean(n, names))
		}
	}
	return out, nil
}

// stateDir is where runs index the faults they may leave on, so the next
// run against the same endpoint rolls back after a killed one.
func stateDir() string {
	if d := os.Getenv("CHAOSKIT_STATE_DIR"); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "chaoskit", "runs")
}

func runScenarios(ctx context.Context, out io.Writer, args []string, f runFlags) error {
	formats, err := reports.ParseFormats(f.formats)
	if err != nil {
		return usageError("--format: %v", err)
	}
	scs, err := loadScenarios(args, f.bundled, f.load)
	if err != nil {
		return err
	}
	if scs, err = selectScenarios(scs, f.only); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return &runner.InfraError{Msg: "cannot find the chaoskit executable", Err: err}
	}
	if err := os.MkdirAll(f.reportDir, 0o755); err != nil {
		return &runner.InfraError{Msg: "cannot create the report directory", Err: err}
	}
	live := isTerminal(out)
	scale := f.load.rateScale
	if scale == 1 {
		scale = 0
	}
	started := time.Now()
	var reps []reports.ScenarioReport
	var runErr error
	for i, sc := range scs {
		fmt.Fprintf(out, "%s (%s) [%d/%d]\n", sc.Name, sc.File, i+1, len(scs))
		dir := filepath.Join(f.reportDir, sc.Name)
		res, err := runner.Run(ctx, sc, runner.Options{Self: self, Dir: dir, Log: out, Live: live, Tool: version,
			StateDir: stateDir(), RateScale: scale})
		rep := reports.ScenarioReport{Name: sc.Name, File: sc.File, RunDir: sc.Name}
		if res != nil {
			judge(&rep, sc, res.Timeline)
		}
		if err != nil {
			rep.Error = err.Error()
			fmt.Fprintf(out, "  %s: %v\n", sc.Name, err)
		}
		rep.Verdict = reports.ScenarioVerdict(rep.Contracts, err)
		reps = append(reps, rep)
		if err != nil {
			if runErr == nil || errors.Is(err, runner.ErrInterrupted) {
				runErr = err
			}
			if !f.keepGoing || errors.Is(err, runner.ErrInterrupted) {
				break
			}
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

// isTerminal says whether w is a terminal, where progress is redrawn live.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// colorOK says whether to paint output: only on a terminal, never with
// NO_COLOR set (https://no-color.org).
func colorOK(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return isTerminal(w)
}
