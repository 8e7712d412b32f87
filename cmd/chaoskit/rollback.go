package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/runner"
)

// rolledBack is one run directory of rollback -o json.
type rolledBack struct {
	Dir      string   `json:"dir"`
	Control  string   `json:"control,omitempty"`
	Disabled []string `json:"disabled"`
	// Gone says nothing listens at the control endpoint any more: the
	// faults went with the service.
	Gone bool `json:"gone,omitempty"`
}

func newRollbackCmd() *cobra.Command {
	var format string
	var allowHosts []string
	cmd := &cobra.Command{
		Use:   "rollback RUN_DIR",
		Short: "Disable every fault a run recorded (after a run was killed)",
		Long: `Rollback reads the fault record of every run directory at or below RUN_DIR
and disables those faults through their control endpoints. Use it when a
run was killed (kill -9) before it could clean up after itself. (The next
run against the same control endpoint also does it by itself.)

A control endpoint that is not on loopback is reached only when --allow-host
names its host: the record is a file anyone could edit, and cannot give that
consent itself.

-o json prints one JSON document: {"runs": [{"dir", "control", "disabled",
"gone"}], "error"} (error only when the rollback is incomplete).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			allow, err := checkAllowHosts(allowHosts)
			if err != nil {
				return err
			}
			res, err := runner.Rollback(cmd.Context(), args[0], stateDir(), allow)
			if err != nil {
				err = &runner.InfraError{Msg: "rollback incomplete", Err: err}
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				doc := struct {
					Runs  []rolledBack `json:"runs"`
					Error string       `json:"error,omitempty"`
				}{Runs: []rolledBack{}}
				for _, r := range res {
					d := r.Disabled
					if d == nil {
						d = []string{}
					}
					doc.Runs = append(doc.Runs, rolledBack{Dir: r.Dir, Control: r.Control, Disabled: d, Gone: r.Gone})
				}
				if err != nil {
					doc.Error = err.Error()
				}
				if perr := printJSON(out, doc); perr != nil && err == nil {
					err = perr
				}
				return err
			}
			for _, r := range res {
				switch {
				case r.Gone:
					fmt.Fprintf(out, "%s: nothing listens at %s any more: the service has stopped and its faults went with it\n", r.Dir, r.Control)
				case r.Control == "":
					fmt.Fprintf(out, "%s: no fault was left on\n", r.Dir)
				default:
					fmt.Fprintf(out, "%s: %d fault(s) disabled at %s %v\n", r.Dir, len(r.Disabled), r.Control, r.Disabled)
				}
			}
			return err
		},
	}
	formatFlag(cmd, &format, "text", "json")
	allowHostFlag(cmd, &allowHosts)
	return cmd
}
