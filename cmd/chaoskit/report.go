package main

import (
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/reports"
)

func newReportCmd() *cobra.Command {
	var o harness.RejudgeOptions
	var formats string
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
			var err error
			if o.Formats, err = reports.ParseFormats(formats); err != nil {
				return usageError("--format: %v", err)
			}
			o.Out = cmd.OutOrStdout()
			o.Color = colorOK(o.Out)
			_, err = harness.Rejudge(args[0], o)
			return err
		},
	}
	cmd.Flags().StringVar(&o.ReportDir, "report-dir", "", "directory for the report files (default RUN_DIR)")
	cmd.Flags().StringVar(&formats, "format", formatsFlagDefault, formatsFlagUsage)
	cmd.Flags().StringVar(&o.Scenario, "scenario", "", "judge with this scenario file instead (one run only)")
	_ = cmd.RegisterFlagCompletionFunc("format", completeFormats)
	return cmd
}
