package main

import (
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/internal/shellwords"
	"github.com/chaoskit/chaoskit/reports"
)

// diffFormatsDefault are the diff's reports by default: the table, and the
// Markdown a pull-request comment takes.
const diffFormatsDefault = "table,json,markdown"

func newDiffCmd() *cobra.Command {
	var (
		o        harness.DiffOptions
		ro       harness.DiffReportOptions
		load     loadFlags
		formats  string
		output   string
		only     []string
		minScale float64
		cmdLines [2]string // --base-cmd, --head-cmd
	)
	cmd := &cobra.Command{
		Use:   "diff [SCENARIO|DIR]... [--base REV] [--head REV]",
		Short: "Run scenarios against a base and a head build and say whether the head degrades worse",
		Long: `Diff runs each scenario against two builds of a service, base and head,
with the same faults, load and seed, --runs times each (interleaved: base,
head, base, head, …), judges every run as run does, and compares the two
sides figure by figure (latency percentiles, class shares, status classes,
breaker time open, time to recover, lost writes, each contract's
expectations) and fault by fault (the bill: requests failed, degraded,
stale, refused, p99 added, seconds to recover). A difference counts only
beyond the noise the repetitions show (docs/diff.md).

A side is the scenario's target as written unless a flag says otherwise:
  --base REV / --head REV            a git revision of the module in -C
                                     (default .), built as chaoskit build
                                     would (--package, default . or
                                     ./cmd/chaoskit for a demo target); the
                                     work tree is never touched, and each
                                     revision's build is kept by its tree
                                     hash for the next diff
  --base-binary / --head-binary PATH a program already built (for a demo
                                     target, a chaoskit binary)
  --base-arg / --head-arg ARG        an argument added after the target's
                                     own (repeatable): --head-arg=--no-fallback
  --base-cmd / --head-cmd 'CMD ARGS' a target command: replaces the
                                     scenario's target.command.argv whole,
                                     split into words as a shell would
                                     quote them (nothing expanded; no pipe
                                     or redirection), {port} filled as in
                                     the scenario
A revision and a binary exclude each other; arguments go with either. A
command excludes the other three, and a demo target.

Writes each run into DIR/NAME-base-1, DIR/NAME-head-1, … and the reports
--format names: the table to the terminal, diff.json, diff.md (made for a
pull-request comment) and diff.html to DIR.

Exit codes: 0 no gated figure regressed, 1 one did (--gate chooses which
figures count; every figure by default), 2 invalid input (an unknown
revision, a bad flag, a scenario's error at file:line:column), 3 a build or
a run failed (a revision that does not compile: the compiler's output).`,
		Example: `  chaoskit diff scenarios/db-timeout-serves-cache.yaml --head-arg=--no-fallback
  chaoskit diff chaoskit/ --base origin/main --head HEAD --package ./cmd/server
  chaoskit diff svc.yaml --base-binary old/server --head-binary bin/server --runs 5
  chaoskit diff svc.yaml --head-cmd 'bin/server --listen 127.0.0.1:{port} --cache-size 0'
  chaoskit diff scenarios/ --base main --gate 'p99' --gate 'bill.*' --format markdown`,
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForLoad()
			if err := checkFormat(output, "text", "json"); err != nil {
				return err
			}
			fs, err := reports.ParseFormats(formats)
			if err != nil {
				return usageError("--format: %v", err)
			}
			if cmd.Flags().Changed("runs") && o.Runs < 1 {
				return usageError("--runs %d: give 1 or more runs of each side", o.Runs)
			}
			if minScale < 0 {
				return usageError("--min-effect %v: give a factor above 0 (1 is the default)", minScale)
			}
			for i, side := range []*harness.Side{&o.Base, &o.Head} {
				name := [2]string{"base-cmd", "head-cmd"}[i]
				if !cmd.Flags().Changed(name) {
					continue
				}
				words, err := shellwords.Split(cmdLines[i])
				if err != nil {
					return usageError("--%s %q: %v", name, cmdLines[i], err)
				}
				side.Command = append([]string{}, words...) // given, even empty
			}
			if len(args) == 0 {
				return usageError("name a scenario or a directory of them: chaoskit diff scenarios/db-timeout-serves-cache.yaml --head-arg=--no-fallback")
			}
			scs, err := load.load(args, false)
			if err != nil {
				return err
			}
			if scs, err = harness.Select(scs, only); err != nil {
				return err
			}
			ro.Formats, ro.Compare.MinEffect = fs, minScale
			o.Out, o.Width = cmd.OutOrStdout(), terminalWidth(cmd.OutOrStdout())
			if output == "json" {
				o.Out, ro.JSON = cmd.ErrOrStderr(), cmd.OutOrStdout()
			}
			o.Tool, o.StateDir = version, stateDir()
			o.Build.Log = o.Out
			_, err = harness.Diff(cmd.Context(), scs, o, ro)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Base.Rev, "base", "", "the base: a git revision of the module in -C, built (a branch, a tag, a commit, origin/main, HEAD~1)")
	f.StringVar(&o.Head.Rev, "head", "", "the head: a git revision, built")
	f.StringVar(&o.Base.Binary, "base-binary", "", "the base: a program already built")
	f.StringVar(&o.Head.Binary, "head-binary", "", "the head: a program already built")
	f.StringArrayVar(&o.Base.Args, "base-arg", nil, "add this argument to the base's target command (repeatable)")
	f.StringArrayVar(&o.Head.Args, "head-arg", nil, "add this argument to the head's target command (repeatable), e.g. --head-arg=--no-fallback")
	f.StringVar(&cmdLines[0], "base-cmd", "", "the base: a target command that replaces the scenario's target.command.argv, e.g. 'bin/old --listen 127.0.0.1:{port}'")
	f.StringVar(&cmdLines[1], "head-cmd", "", "the head: a target command that replaces the scenario's target.command.argv")
	f.IntVar(&o.Runs, "runs", harness.DefaultDiffRuns, "runs of each side, per scenario, interleaved")
	f.StringVarP(&o.Build.Dir, "dir", "C", "", "a directory in the git work tree and the module --base and --head build (default .)")
	f.StringVar(&o.Build.Package, "package", "", "the main package a revision builds, relative to the module (default ., or ./cmd/chaoskit for a demo target)")
	f.StringVar(&o.Build.CacheDir, "cache", "", "directory of the revisions' builds and their isolated Go build cache (default: the user cache dir's chaoskit)")
	f.StringArrayVar(&o.Build.Flags, "flag", nil, "extra go build flag for the revisions' builds (repeatable)")
	f.StringVar(&o.ReportDir, "report-dir", "out/diff", "directory for the runs and the diff's reports")
	f.StringVar(&formats, "format", diffFormatsDefault, "reports to write, comma-separated: table, json, markdown, html")
	f.StringArrayVar(&ro.Compare.Gate, "gate", nil, "only a regression of the figures this glob names fails the diff (repeatable): p99, 'share.*', 'bill.*', verdict (default: every figure)")
	f.Float64Var(&minScale, "min-effect", 1, "scale every figure's minimum effect by F: 2 asks for differences twice as large before a word other than same")
	f.StringArrayVar(&only, "only", nil, "diff only the scenario with this name (repeatable)")
	f.StringVarP(&output, "output", "o", "text", "what stdout holds: text (the progress and the table) or json (the comparison as one JSON document; the rest goes to stderr)")
	load.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("format", completeFormats)
	_ = cmd.RegisterFlagCompletionFunc("only", completeScenarioNames)
	return cmd
}
