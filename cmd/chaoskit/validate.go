package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/plan"
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
offending line and a hint, every one in one pass, exit code 2. It refuses
everything run would refuse when it starts: rates above 1,000,000/s,
unknown demo flags, names that are not one path element.

In a directory, files whose names start with _ are partials, read only
when a scenario includes them; validate says which it skipped.`,
		Example: `  chaoskit validate scenarios/
  chaoskit validate checkout.yaml --var rate=500/s`,
		RunE: func(cmd *cobra.Command, args []string) error {
			scs, err := lf.load(args, bundled)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, sc := range scs {
				faults := 0
				for _, p := range sc.Phases {
					faults += len(p.Faults)
				}
				fmt.Fprintf(out, "ok    %s  %s (%d phases, %d faults, %d contracts)\n", sc.File, sc.Name, len(sc.Phases), faults, len(sc.Contracts))
			}
			printPartials(out, plan.Partials(args), scs)
			return nil
		},
	}
	cmd.Flags().BoolVar(&bundled, "bundled", false, "validate the scenarios embedded in chaoskit")
	lf.register(cmd)
	return cmd
}

// printPartials says which partial files of the directories validated were
// skipped, and which scenarios include each (and so checked it).
func printPartials(out io.Writer, partials []string, scs []*plan.Scenario) {
	by := map[string][]string{}
	for _, sc := range scs {
		for _, inc := range sc.Included {
			p := filepath.Clean(inc.Path)
			by[p] = append(by[p], sc.Name)
		}
	}
	for _, p := range partials {
		how := "a partial, included by no scenario here (not checked)"
		if names := by[filepath.Clean(p)]; len(names) > 0 {
			how = "a partial, checked as included by " + strings.Join(names, ", ")
		}
		fmt.Fprintf(out, "skip  %s  %s\n", p, how)
	}
}
