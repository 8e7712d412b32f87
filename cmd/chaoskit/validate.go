package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newValidateCmd() *cobra.Command {
	var bundled bool
	cmd := &cobra.Command{
		Use:   "validate [SCENARIO|DIR]...",
		Short: "Check scenarios without running them",
		Long: `Validate loads scenarios strictly: unknown fields, wrong types, bad
durations and rates, duplicate phases, unknown failpoints and contracts that
do not compile are reported as FILE:LINE:COL with a hint, exit code 2.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			scs, err := loadScenarios(args, bundled)
			if err != nil {
				return err
			}
			for _, sc := range scs {
				fmt.Fprintf(cmd.OutOrStdout(), "ok  %s  %s (%d phases, %d contracts)\n", sc.File, sc.Name, len(sc.Phases), len(sc.Contracts))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&bundled, "bundled", false, "validate the scenarios embedded in chaoskit")
	return cmd
}
