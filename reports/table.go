package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/chaoskit/chaoskit/contract"
)

// TableOptions control the terminal table.
type TableOptions struct {
	// Color paints verdicts; callers set it only for a terminal without
	// NO_COLOR.
	Color bool
	// Dir is the report directory the run directories are relative to.
	Dir string
}

// WriteTable renders one row per expectation of every contract: scenario,
// contract, window, check, measured, expected, verdict; then a summary line.
func WriteTable(w io.Writer, r *Report, opts TableOptions) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowMergeMode(tw.MergeHierarchical),
	)
	t.Header("SCENARIO", "CONTRACT", "WINDOW", "CHECK", "MEASURED", "EXPECTED", "VERDICT")
	for _, s := range r.Scenarios {
		if len(s.Contracts) == 0 {
			_ = t.Append(s.Name, "-", "-", "-", "-", "-", paint(s.Verdict, opts.Color))
		}
		for _, c := range s.Contracts {
			if len(c.Checks) == 0 {
				_ = t.Append(s.Name, c.Name, c.Window, "-", c.Measured, c.Expected, paint(c.Outcome, opts.Color))
			}
			for _, ch := range c.Checks {
				verdict := ch.Outcome
				if c.Outcome == contract.Inconclusive {
					verdict = contract.Inconclusive
				}
				_ = t.Append(s.Name, c.Name, c.Window, ch.Expect, ch.Measured, ch.Expected, paint(verdict, opts.Color))
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, s := range r.Scenarios {
		if s.Error != "" {
			fmt.Fprintf(w, "%s: %s\n", s.Name, s.Error)
		}
		for _, c := range s.Contracts {
			if c.Reason != "" {
				fmt.Fprintf(w, "%s / %s: inconclusive: %s\n", s.Name, c.Name, c.Reason)
			}
			for _, ch := range c.Checks {
				if ch.Outcome != contract.Fail || len(ch.Violations) == 0 {
					continue
				}
				fmt.Fprintf(w, "%s / %s: first violation of %q: %s\n", s.Name, c.Name, ch.Expect, violationText(ch.Violations[0]))
			}
		}
		for _, f := range s.Findings {
			fmt.Fprintf(w, "%s: finding: %s\n", s.Name, f.Message)
		}
	}
	for _, s := range r.Scenarios {
		switch {
		case s.RunDir == "":
		case filepath.IsAbs(s.RunDir):
			fmt.Fprintf(w, "run dir: %s\n", s.RunDir)
		default:
			fmt.Fprintf(w, "run dir: %s\n", filepath.Join(opts.Dir, s.RunDir))
		}
	}
	_, err := fmt.Fprintln(w, Summary(r))
	return err
}

// violationText describes one violating request in a line: when, what,
// how it ended, and the faults that were on.
func violationText(v contract.Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "+%v %s -> %s", v.Offset.Round(time.Millisecond), v.Target, statusText(v.Status, v.Error))
	if v.Class != "" {
		fmt.Fprintf(&b, " %s", v.Class)
		if v.Source != "" && v.Class == contract.Fallback {
			fmt.Fprintf(&b, " (%s)", v.Source)
		}
	}
	if v.Detail != "" {
		fmt.Fprintf(&b, "; %s", v.Detail)
	}
	if len(v.Faults) > 0 {
		fmt.Fprintf(&b, " with %s on", strings.Join(v.Faults, ", "))
	}
	return b.String()
}

func statusText(code int, err string) string {
	if code == 0 {
		return "no response: " + err
	}
	return strconv.Itoa(code)
}

// Summary is the one-line summary of a report.
func Summary(r *Report) string {
	var pass, fail, inc int
	for _, s := range r.Scenarios {
		for _, c := range s.Contracts {
			switch c.Outcome {
			case contract.Pass:
				pass++
			case contract.Fail:
				fail++
			default:
				inc++
			}
		}
	}
	return fmt.Sprintf("%s: %d scenarios, %d contracts: %d passed, %d failed, %d inconclusive (%v)",
		upper(r.Verdict), len(r.Scenarios), pass+fail+inc, pass, fail, inc, r.Duration.Round(1e7))
}

func upper(o contract.Outcome) string {
	switch o {
	case contract.Pass:
		return "PASS"
	case contract.Fail:
		return "FAIL"
	}
	return "INCONCLUSIVE"
}

func paint(o contract.Outcome, color bool) string {
	s := string(o)
	if !color {
		return s
	}
	switch o {
	case contract.Pass:
		return "\x1b[32m" + s + "\x1b[0m"
	case contract.Fail:
		return "\x1b[31m" + s + "\x1b[0m"
	}
	return "\x1b[33m" + s + "\x1b[0m"
}
