package reports

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/fuzz"
)

// The renderings of campaigns (chaoskit fuzz, chaoskit explore) for a
// terminal, next to those of runs.

// WriteCoverage prints which points × actions the runs exercised and how
// often each invariant was judged.
func WriteCoverage(out io.Writer, c *fuzz.Coverage) {
	fmt.Fprintf(out, "\ncoverage over %d runs\n", c.Runs)
	fmt.Fprintf(out, "  %-44s %9s %6s %9s\n", "point × action", "scheduled", "fired", "hits")
	for _, fc := range c.Faults {
		fmt.Fprintf(out, "  %-44s %9d %6d %9d\n", fc.Key, fc.Scheduled, fc.Fired, fc.Hits)
	}
	fmt.Fprintf(out, "  %-60s %7s %5s %5s %12s\n", "invariant", "checked", "pass", "fail", "inconclusive")
	for _, ic := range c.Invariants {
		fmt.Fprintf(out, "  %-60s %7d %5d %5d %12d\n", truncate(ic.Name, 60), ic.Checked(), ic.Pass, ic.Fail, ic.Inconclusive)
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// WriteMatrix prints an exploration: one row per combination and one column per
// invariant, then the invariants' names and what the reduction saved.
func WriteMatrix(out io.Writer, ex *fuzz.Exploration) {
	fmt.Fprintln(out, "\nfault × invariant")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := []string{"fault"}
	for i := range ex.Invariants {
		head = append(head, fmt.Sprintf("I%d", i+1))
	}
	head = append(head, "mix of faulted requests")
	fmt.Fprintln(tw, "  "+strings.Join(head, "\t"))
	rows := append([]*fuzz.Row{ex.Baseline}, ex.Singles...)
	rows = append(rows, ex.Pairs...)
	for _, r := range rows {
		if r == nil {
			continue
		}
		cells := []string{r.Label}
		switch {
		case r.Outcome != nil:
			for _, v := range r.Outcome.Verdicts {
				cells = append(cells, verdictCell(v.Outcome))
			}
			mix := strings.Join(r.Mix, " ")
			if len(r.Combo) == 0 {
				mix = "(no fault on)"
			}
			if len(r.Unfired) > 0 {
				mix += " (never fired: " + strings.Join(r.Unfired, ", ") + ")"
			}
			cells = append(cells, mix)
		case r.CoveredBy != "":
			for range ex.Invariants {
				cells = append(cells, "~")
			}
			cells = append(cells, "covered by "+r.CoveredBy)
		default:
			for range ex.Invariants {
				cells = append(cells, "·")
			}
			cells = append(cells, "not run: budget spent")
		}
		fmt.Fprintln(tw, "  "+strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(out, "\ninvariants")
	for i, name := range ex.Invariants {
		fmt.Fprintf(out, "  I%d  %s\n", i+1, name)
	}
	fmt.Fprintf(out, "\n%d single faults and %d pairs: %d runs (baseline included) in %v; the reduction skipped %d pairs whose effect was covered, saving %d runs; %d left unexplored\n",
		len(ex.Singles), len(ex.Pairs), ex.Runs, ex.Elapsed.Round(time.Second), ex.Saved, ex.Saved, ex.Unexplored)
	fmt.Fprintln(out, "pass: held · FAIL: broken · inc: inconclusive · ~: not run, covered by the pair named · ·: not run")
}

func verdictCell(o contract.Outcome) string {
	switch o {
	case contract.Pass:
		return "pass"
	case contract.Fail:
		return "FAIL"
	}
	return "inc"
}
