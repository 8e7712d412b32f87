package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/reports"
)

func newExploreCmd() *cobra.Command {
	var f fuzzTarget
	cmd := &cobra.Command{
		Use:   "explore SCENARIO | --bundled NAME",
		Short: "Run every single fault of a fault space, then pairs, and print fault × invariant verdicts",
		Long: `Explore works through a fuzz scenario's fault space systematically, in the
spirit of Filibuster: a fault-free baseline, then every point × action alone
(in its strongest form: the longest latency, the highest probability, on for
a whole fault phase), then every pair of faults on different points, each a
real run judged by the scenario's invariants.

A pair is skipped when a pair of faults with the same effects alone (the same
failed invariants and the same classification mix of the faulted requests)
already ran: its effect counts as covered. A fault whose marker never fired
alone has no known effect, so it is equivalent only to itself. The matrix
shows every combination's verdicts and says how many runs the reduction
saved.

Exit codes: 0 every combination kept every invariant, 1 one broke one, 2
invalid input, 3 infrastructure error, 130 interrupted.

-o json prints the matrix as one JSON document on stdout (explore.json's
content) and the progress on stderr.`,
		Example: `  chaoskit explore --bundled shop
  chaoskit explore --bundled shop --var bug=stale-after-recovery --budget 5m`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tuneGCForLoad()
			out, err := f.streams(cmd)
			if err != nil {
				return err
			}
			doc, err := runExplore(cmd.Context(), out, args, f)
			if doc == nil {
				return f.result(cmd, nil, err)
			}
			return f.result(cmd, doc, err)
		},
	}
	f.register(cmd, 10*time.Minute)
	return cmd
}

// exploreDoc is what explore -o json prints: explore.json's document.
type exploreDoc struct {
	Scenario    string            `json:"scenario"`
	File        string            `json:"file"`
	Exploration *fuzz.Exploration `json:"exploration"`
}

func runExplore(ctx context.Context, out io.Writer, args []string, f fuzzTarget) (*exploreDoc, error) {
	c, err := f.campaign(args, out)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "exploring %s (%s): %d single faults and their pairs, budget %v\n", c.Scenario.Name, c.Scenario.File, len(fuzz.Singles(c.Scenario.Fuzz)), f.budget)
	prog := newProgress(out, f.budget)
	prog.phase = "explore"
	c.Progress = prog.event
	ex, err := c.Explore(ctx, f.budget)
	prog.stop()
	if ex != nil {
		reports.WriteMatrix(out, ex)
		return &exploreDoc{c.Scenario.Name, c.Scenario.File, ex}, err
	}
	return nil, err
}
