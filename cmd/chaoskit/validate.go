package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var bundled bool
	var lf loadFlags
	cmd := &cobra.Command{
		Use:   "validate [SCENARIO|DIR]...",
		Short: "Check scenarios without running them",
		Long: `Validate loads scenarios strictly: malformed YAML, unknown fields, wrong
types, bad durations and rates, duplicate phases, unknown failpoints and
contracts that do not compile are reported as FILE:LINE:COL with the
offending line and a hint, exit code 2.`,
		Example: `  chaoskit validate scenarios/
  chaoskit validate checkout.yaml --var rate=500/s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			scs, err := lf.load(args, bundled)
			if err != nil {
				return err
			}
			for _, sc := range scs {
				faults := 0
				for _, p := range sc.Phases {
					faults += len(p.Faults)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ok  %s  %s (%d phases, %d faults, %d contracts)\n", sc.File, sc.Name, len(sc.Phases), faults, len(sc.Contracts))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&bundled, "bundled", false, "validate the scenarios embedded in chaoskit")
	lf.register(cmd)
	return cmd
}
