package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/runner"
)

const (
	formatsFlagDefault = "table,json"
	formatsFlagUsage   = "reports to write, comma-separated: table, json, junit, markdown, html"
)

type runFlags struct {
	reportDir string
	bundled   bool
	formats   string
	load      loadFlags
	only      []string
	keepGoing bool
	output    outputFlags
	// shard, noFaults, faultsOnly and startAt slice the load across
	// processes (docs/scenarios.md, "Shards").
	shard      string
	noFaults   bool
	faultsOnly bool
	startAt    string
}

// outputFlags are what run and report print on stdout: -o/--output,
// --json and --quiet.
type outputFlags struct {
	output string
	json   bool
	quiet  bool
}

func (o *outputFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "what stdout holds: text (the progress, the table, the files written) or json (the report as one JSON document; the rest goes to stderr)")
	cmd.Flags().BoolVar(&o.json, "json", false, "the same as -o json")
	markOld(cmd, "json", "write -o json")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print only the verdict line (with -o json, only the report)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

// streams is where a command prints, as its output flags say: Out gets
// the progress (and, in text mode, everything), Results the result, and
// GitHub the report when chaoskit runs as a GitHub Actions step.
type streams struct {
	mode    harness.OutputMode
	out     io.Writer
	results io.Writer
	github  *harness.GitHub
	gitlab  *harness.GitLab
}

func (o *outputFlags) streams(cmd *cobra.Command) (streams, error) {
	json := o.json
	switch o.output {
	case "text":
		if o.json && cmd.Flags().Changed("output") {
			return streams{}, usageError("--json and -o text: give one of them")
		}
	case "json":
		json = true
	default:
		return streams{}, usageError("-o %s: write -o text or -o json", o.output)
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	s := streams{out: stdout, results: stdout}
	switch {
	case json && o.quiet:
		s.mode, s.out = harness.OutputJSON, io.Discard
	case json:
		s.mode, s.out = harness.OutputJSON, stderr
	case o.quiet:
		s.mode = harness.OutputQuiet
	}
	// Workflow commands go where GitHub documents them, stdout, unless
	// stdout holds only the result: the runner reads stderr's too.
	commands := stdout
	if s.mode != harness.OutputText {
		commands = stderr
	}
	s.github = harness.GitHubFromEnv(os.Getenv, commands)
	s.gitlab = harness.GitLabFromEnv(os.Getenv)
	return s, nil
}

// done ends a command that printed into s: in JSON mode, an invocation
// that made no report prints the error as a JSON document instead
// (harness.ErrorReport), so that stdout always holds one.
func (s streams) done(rep *reports.Report, err error) error {
	if s.mode == harness.OutputJSON && rep == nil && err != nil {
		_ = harness.WriteErrorJSON(s.results, err)
	}
	return err
}

// loadFlags are the flags that change how scenarios load, shared by run and
// validate.
type loadFlags struct {
	vars       []string
	rateScale  float64
	allowHosts []string
}

func (l *loadFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&l.vars, "var", nil, "set a scenario variable: --var NAME=VALUE (repeatable); overrides the scenario's vars")
	cmd.Flags().Float64Var(&l.rateScale, "rate-scale", 1, "multiply every rate of every scenario by F (e.g. 0.1 for a quick smoke run)")
	allowHostFlag(cmd, &l.allowHosts)
}

func (l *loadFlags) options() (plan.Options, error) {
	// 0 would mean "not given" to the loader, so the flag refuses it here;
	// NaN and infinities the loader refuses for every caller.
	if l.rateScale == 0 {
		return plan.Options{}, usageError("--rate-scale 0: give a factor above 0, such as 0.5 or 2")
	}
	vars, err := parseVars(l.vars)
	if err != nil {
		return plan.Options{}, err
	}
	allow, err := checkAllowHosts(l.allowHosts)
	if err != nil {
		return plan.Options{}, err
	}
	return harness.LoadOptions(vars, l.rateScale, allow), nil
}

// parseVars parses --var NAME=VALUE flags.
func parseVars(flags []string) (map[string]string, error) {
	var vars map[string]string
	for _, v := range flags {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, usageError("--var %q: write --var NAME=VALUE", v)
		}
		if vars == nil {
			vars = map[string]string{}
		}
		vars[name] = value
	}
	return vars, nil
}

// load loads the scenarios the arguments name.
func (l *loadFlags) load(args []string, bundled bool) ([]*plan.Scenario, error) {
	opts, err := l.options()
	if err != nil {
		return nil, err
	}
	return harness.Load(args, bundled, opts)
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

-o json prints the report on stdout as one JSON document (report.json's
schema, docs/report-schema.md) and nothing else: the progress, the table and
every diagnostic go to stderr, and the files --format names are written as
ever. When no report could be made (invalid input, exit 2), stdout holds an
error document instead. --quiet prints only the verdict line.

Under GitHub Actions (GITHUB_ACTIONS=true) the Markdown report is appended
to the step summary, each scenario's progress is a group of the log, and the
10 most important shortfalls are annotations on their line of the scenario
file (::error for a broken run or a failed contract, ::warning for an
inconclusive one), followed by one line that counts them all. Under GitLab
CI (GITLAB_CI=true) each scenario's progress is a collapsible section and
DIR/gl-code-quality-report.json is a Code Quality report of the same
shortfalls (artifacts:reports:codequality).

A scenario whose run fails for a reason of the harness or the target (exit
3) stops the invocation unless --keep-going is given.`,
		Example: `  chaoskit run scenarios/ --report-dir out
  chaoskit run scenarios/ --only db-timeout-serves-cache --rate-scale 0.5
  chaoskit run checkout.yaml --var rate=500/s
  chaoskit run scenarios/ --format table,json,junit,markdown,html
  chaoskit run scenarios/ -o json | jq -r '.scenarios[] | .name + " " + .verdict'
  chaoskit run --bundled`,
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForLoad()
			s, err := f.output.streams(cmd)
			if err != nil {
				return err
			}
			rep, err := runScenarios(cmd, args, f, s)
			return s.done(rep, err)
		},
	}
	cmd.Flags().StringVar(&f.reportDir, "report-dir", "out", "directory for report.json and the run directories")
	cmd.Flags().BoolVar(&f.bundled, "bundled", false, "run the scenarios embedded in chaoskit (they target the demo service)")
	cmd.Flags().StringVar(&f.formats, "format", formatsFlagDefault, formatsFlagUsage)
	cmd.Flags().StringArrayVar(&f.only, "only", nil, "run only the scenario with this name (repeatable)")
	cmd.Flags().BoolVar(&f.keepGoing, "keep-going", false, "go on with the next scenario after one could not run")
	cmd.Flags().StringVar(&f.shard, "shard", "", "send only the i-th of n disjoint slices of every phase's load: --shard 2/3; shard 1 switches the faults")
	cmd.Flags().BoolVar(&f.noFaults, "no-faults", false, "switch no fault (a shard whose faults a --faults-only run switches)")
	cmd.Flags().BoolVar(&f.faultsOnly, "faults-only", false, "switch the phases' faults and send no load (the shards send it)")
	cmd.Flags().StringVar(&f.startAt, "start-at", "", "start the first phase at this time (RFC 3339, e.g. 2026-12-01T21:00:00Z), so that shards started apart run together")
	f.load.register(cmd)
	f.output.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("format", completeFormats)
	_ = cmd.RegisterFlagCompletionFunc("only", completeScenarioNames)
	return cmd
}

// runScenarios loads, selects and runs the scenarios the command line
// names, printing into s.
func runScenarios(cmd *cobra.Command, args []string, f runFlags, s streams) (*reports.Report, error) {
	formats, err := reports.ParseFormats(f.formats)
	if err != nil {
		return nil, usageError("--format: %v", err)
	}
	scs, err := f.load.load(args, f.bundled)
	if err != nil {
		return nil, err
	}
	if scs, err = harness.Select(scs, f.only); err != nil {
		return nil, err
	}
	scale := f.load.rateScale
	if scale == 1 {
		scale = 0
	}
	o, err := f.shardOptions()
	if err != nil {
		return nil, err
	}
	o.ReportDir, o.Formats, o.Out, o.Results, o.Mode, o.GitHub, o.GitLab = f.reportDir, formats, s.out, s.results, s.mode, s.github, s.gitlab
	o.Live, o.Color, o.Width, o.LiveWidth = isTerminal(s.out), colorOK(s.out), terminalWidth(s.out), liveWidth(s.out)
	o.Tool, o.StateDir, o.RateScale, o.KeepGoing = version, stateDir(), scale, f.keepGoing
	return harness.Run(cmd.Context(), scs, o)
}

// shardOptions reads the shard flags.
func (f *runFlags) shardOptions() (harness.Options, error) {
	var o harness.Options
	if f.shard != "" {
		sh, err := runner.ParseShard(f.shard)
		if err != nil {
			return o, usageError("--shard: %v", err)
		}
		o.Shard = sh
	}
	if f.faultsOnly && (f.shard != "" || f.noFaults) {
		return o, usageError("--faults-only sends no load: give it without --shard and --no-faults (the shards send the load, each with --no-faults)")
	}
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339, f.startAt)
		if err != nil {
			return o, usageError("--start-at %q: write a time as 2026-12-01T21:00:00Z", f.startAt)
		}
		if err := checkStartAt(t, time.Now()); err != nil {
			return o, err
		}
		o.StartAt = t
	}
	o.NoFaults, o.FaultsOnly = f.noFaults, f.faultsOnly
	return o, nil
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

// maxStartAhead bounds how far ahead --start-at may be: shards are started
// together, minutes apart at most.
const maxStartAhead = 24 * time.Hour

// checkStartAt refuses a --start-at that has passed (the shards would not
// run together, and the run would start at once without a word) or lies
// more than maxStartAhead ahead (a typo in the year waits for ever).
func checkStartAt(t, now time.Time) error {
	switch {
	case t.Before(now):
		return usageError("--start-at %s passed %v ago: the shards would not start together; give a time ahead", t.Format(time.RFC3339), now.Sub(t).Round(time.Second))
	case t.After(now.Add(maxStartAhead)):
		return usageError("--start-at %s is %v ahead, more than %v: check the date", t.Format(time.RFC3339), t.Sub(now).Round(time.Minute), maxStartAhead)
	}
	return nil
}
