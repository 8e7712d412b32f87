package main

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
)

func newReportCmd() *cobra.Command {
	var o harness.RejudgeOptions
	var formats string
	var output outputFlags
	var merge bool
	cmd := &cobra.Command{
		Use:   "report RUN_DIR | --merge RUN_DIR...",
		Short: "Judge and report a saved run again, without re-running it",
		Long: `Report judges runs saved on disk again and writes their reports, without
starting a service or sending a request. RUN_DIR is a run directory (it holds
timeline.jsonl) or any directory above run directories, such as the
--report-dir of an earlier chaoskit run.

A run directory is judged with the copy of the scenario saved in it
(scenario.yaml), while it has the SHA-256 the run recorded, else, when it
saved none, with the bundled scenario of the same name. The scenario file
the run names is never opened: a run directory may come from elsewhere.
--scenario FILE judges with another file, such as the scenario with its
contracts edited since the run.

--merge judges the run directories given as one run: the shards of one
scenario's load (chaoskit run --shard i/n), with the run that switched the
faults (shard 1, or a --faults-only run). The reports go to --report-dir,
default the first directory.

-o json, --quiet, GitHub Actions and GitLab CI are as for chaoskit run.`,
		Example: `  chaoskit report out
  chaoskit report out/db-timeout-serves-cache --format table,html --report-dir review
  chaoskit report --merge shard-1/soak shard-2/soak shard-3/soak --report-dir merged`,
		Args: func(cmd *cobra.Command, args []string) error {
			if merge {
				return cobra.MinimumNArgs(2)(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := output.streams(cmd)
			if err != nil {
				return err
			}
			if o.Formats, err = reports.ParseFormats(formats); err != nil {
				return s.done(nil, usageError("--format: %v", err))
			}
			o.Out, o.Results, o.Mode, o.GitHub, o.GitLab = s.out, s.results, s.mode, s.github, s.gitlab
			o.Color = colorOK(o.Out)
			o.Width = terminalWidth(o.Out)
			if merge {
				return s.done(harness.Merge(args, o))
			}
			return s.done(harness.Rejudge(args[0], o))
		},
	}
	cmd.Flags().StringVar(&o.ReportDir, "report-dir", "", "directory for the report files (default RUN_DIR)")
	cmd.Flags().StringVar(&formats, "format", formatsFlagDefault, formatsFlagUsage)
	cmd.Flags().StringVar(&o.Scenario, "scenario", "", "judge with this scenario file instead (one run only)")
	cmd.Flags().BoolVar(&merge, "merge", false, "judge the run directories given (the shards of one run) as one run")
	output.register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("format", completeFormats)
	return cmd
}

// plainWidth is the width output off a terminal keeps within (a file, a
// pipe, CI's log): what a log viewer or a reviewer's editor shows
// without scrolling.
const plainWidth = 120

// terminalWidth is the width in columns the table and the lines that stay
// fit in: COLUMNS when it is set to a number (0 for no limit), else the
// terminal's own width, or plainWidth off a terminal.
func terminalWidth(w io.Writer) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n >= 0 {
		return n
	}
	return liveWidth(w)
}

// liveWidth is the width of the terminal w is, which a line redrawn in
// place must fit whatever COLUMNS says, or plainWidth off a terminal.
func liveWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return plainWidth
	}
	if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
		return cols
	}
	return 80
}
