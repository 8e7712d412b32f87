package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

func newValidateCmd() *cobra.Command {
	var bundled bool
	var lf loadFlags
	var format string
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
when a scenario includes them; validate says which it skipped.

-o json prints the result as one JSON document: the scenarios that loaded
(file, name, phases, faults, contracts) and the partials skipped, or, for
invalid input, the error document of chaoskit run -o json with every problem
at its position.`,
		Example: `  chaoskit validate scenarios/
  chaoskit validate checkout.yaml --var rate=500/s
  chaoskit validate scenarios/ -o json | jq -r '.scenarios[].name'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			scs, err := lf.load(args, bundled)
			if err != nil {
				if format == "json" {
					_ = harness.WriteErrorJSON(out, err)
				}
				return err
			}
			v := validation{SchemaVersion: reports.SchemaVersion, Scenarios: []validScenario{}, Skipped: []skippedPartial{}}
			for _, sc := range scs {
				faults := 0
				for _, p := range sc.Phases {
					faults += len(p.Faults)
				}
				v.Scenarios = append(v.Scenarios, validScenario{File: sc.File, Name: sc.Name, Phases: len(sc.Phases), Faults: faults, Contracts: len(sc.Contracts)})
			}
			v.Skipped = partials(plan.Partials(args), scs)
			if format == "json" {
				return printJSON(out, v)
			}
			for _, s := range v.Scenarios {
				fmt.Fprintf(out, "ok    %s  %s (%d phases, %d faults, %d contracts)\n", s.File, s.Name, s.Phases, s.Faults, s.Contracts)
			}
			for _, p := range v.Skipped {
				fmt.Fprintf(out, "skip  %s  %s\n", p.File, p.Reason)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&bundled, "bundled", false, "validate the scenarios embedded in chaoskit")
	lf.register(cmd)
	formatFlag(cmd, &format, "text", "json")
	return cmd
}

// validation is what validate -o json prints.
type validation struct {
	SchemaVersion int              `json:"schema_version"`
	Scenarios     []validScenario  `json:"scenarios"`
	Skipped       []skippedPartial `json:"skipped"`
}

// validScenario is one scenario that loaded.
type validScenario struct {
	File      string `json:"file"`
	Name      string `json:"name"`
	Phases    int    `json:"phases"`
	Faults    int    `json:"faults"`
	Contracts int    `json:"contracts"`
}

// skippedPartial is a partial file validate did not load on its own.
type skippedPartial struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// partials says which partial files of the directories validated were
// skipped, and which scenarios include each (and so checked it).
func partials(files []string, scs []*plan.Scenario) []skippedPartial {
	by := map[string][]string{}
	for _, sc := range scs {
		for _, inc := range sc.Included {
			p := filepath.Clean(inc.Path)
			by[p] = append(by[p], sc.Name)
		}
	}
	out := []skippedPartial{}
	for _, p := range files {
		how := "a partial, included by no scenario here (not checked)"
		if names := by[filepath.Clean(p)]; len(names) > 0 {
			how = "a partial, checked as included by " + strings.Join(names, ", ")
		}
		out = append(out, skippedPartial{File: p, Reason: how})
	}
	return out
}
