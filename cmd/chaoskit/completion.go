package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
)

// Shell completion of flag values. cobra completes commands and flag names
// by itself (`chaoskit completion bash|zsh|fish|powershell`); these add the
// values: report formats, the names of the scenarios given for --only, and
// the bundled fuzz scenarios.

// completeFormats completes a comma-separated --format list: the formats
// not yet in it, after what was typed so far.
func completeFormats(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	done := ""
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done = toComplete[:i+1]
	}
	given := map[string]bool{}
	for _, f := range strings.Split(done, ",") {
		given[strings.TrimSpace(f)] = true
	}
	var out []string
	for _, f := range reports.Formats {
		if !given[string(f)] {
			out = append(out, done+string(f))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completeScenarioNames completes --only with the names of the scenarios
// the command line names (its files and directories, or --bundled). The
// scenarios load without their targets' failpoint catalogs, so completing
// never starts, scans or asks a service.
func completeScenarioNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	bundled, _ := cmd.Flags().GetBool("bundled")
	scs, err := harness.Load(args, bundled, plan.Options{SkipBodyFiles: true})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(scs))
	for _, sc := range scs {
		names = append(names, sc.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeBundledFuzz completes --bundled NAME of fuzz and explore.
func completeBundledFuzz(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return plan.BundledFuzzNames(), cobra.ShellCompDirectiveNoFileComp
}
