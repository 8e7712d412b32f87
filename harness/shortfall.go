package harness

import (
	"fmt"
	"slices"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
)

// Shortfall is one thing of a report that keeps its verdict from pass: a
// contract that failed or was inconclusive, or a run that broke. The GitHub
// annotations and package chaostest's test failures say the same words.
type Shortfall struct {
	Scenario string
	// Contract is empty when the run broke.
	Contract string
	Outcome  contract.Outcome
	// At is where the contract is written, or the scenario file (without a
	// line) for a run that broke.
	At contract.Position
	// Window is the contract's window and how many requests it held.
	Window string
	// Reasons are each failed check, with its figures and first violation,
	// or why the contract is inconclusive, or why the run broke.
	Reasons []string
}

// Shortfalls lists rep's shortfalls, scenario by scenario: the run's own
// error first, then its contracts in order.
func Shortfalls(rep *reports.Report) []Shortfall {
	var out []Shortfall
	for _, s := range rep.Scenarios {
		if s.Error != "" {
			out = append(out, Shortfall{Scenario: s.Name, Outcome: s.Verdict, At: contract.Position{File: s.File}, Reasons: []string{s.Error}})
		}
		for _, c := range s.Contracts {
			if c.Outcome == contract.Pass {
				continue
			}
			sf := Shortfall{Scenario: s.Name, Contract: c.Name, Outcome: c.Outcome, At: c.Position,
				Window: fmt.Sprintf("window %s, %d requests", c.Window, c.Samples), Reasons: reasons(c)}
			if sf.At.IsZero() {
				sf.At.File = s.File
			}
			out = append(out, sf)
		}
	}
	return out
}

// Ranked orders shortfalls by importance, the order in which CI shows
// them when it can show only some: runs that broke first (nothing of them
// was judged), then failed contracts, then inconclusive ones; within each,
// the report's order. sfs is sorted in place and returned.
func Ranked(sfs []Shortfall) []Shortfall {
	rank := func(sf Shortfall) int {
		switch {
		case sf.Contract == "":
			return 0
		case sf.Outcome == contract.Fail:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(sfs, func(a, b Shortfall) int { return rank(a) - rank(b) })
	return sfs
}

// reasons says why a contract did not pass: each failed check with its
// figures and first violation, or why it is inconclusive.
func reasons(c contract.Verdict) []string {
	var lines []string
	if c.Reason != "" {
		lines = append(lines, "inconclusive: "+c.Reason)
	}
	for _, ch := range c.Checks {
		switch {
		case ch.Outcome == contract.Fail:
			l := fmt.Sprintf("%s: measured %s, expected %s (%d samples)", ch.Expect, ch.Measured, ch.Expected, ch.Samples)
			if len(ch.Violations) > 0 {
				l += "; first violation: " + reports.ViolationText(ch.Violations[0])
			}
			lines = append(lines, l)
		case ch.Reason != "" && ch.Reason != c.Reason:
			lines = append(lines, fmt.Sprintf("%s: inconclusive: %s", ch.Expect, ch.Reason))
		}
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("measured %s, expected %s", c.Measured, c.Expected))
	}
	return lines
}
