package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/runner"
)

func newRollbackCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rollback RUN_DIR",
		Short: "Disable every fault a run recorded (after a run was killed)",
		Long: `Rollback reads the fault record of every run directory at or below RUN_DIR
and disables those faults through their control endpoints. Use it when a
run was killed (kill -9) before it could clean up after itself. (The next
run against the same control endpoint also does it by itself.)`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := runner.Rollback(cmd.Context(), args[0], stateDir())
			for _, r := range res {
				switch {
				case r.Gone:
					fmt.Fprintf(cmd.OutOrStdout(), "%s: nothing listens at %s any more: the service has stopped and its faults went with it\n", r.Dir, r.Control)
				case r.Control == "":
					fmt.Fprintf(cmd.OutOrStdout(), "%s: no fault was left on\n", r.Dir)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "%s: %d fault(s) disabled at %s %v\n", r.Dir, len(r.Disabled), r.Control, r.Disabled)
				}
			}
			if err != nil {
				return &runner.InfraError{Msg: "rollback incomplete", Err: err}
			}
			return nil
		},
	}
}
