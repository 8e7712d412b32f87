package reports

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// WriteMarkdown writes a summary fit for a CI job summary or a pull request
// comment: the verdict, a table of every check, and the evidence of every
// contract that did not pass. It holds no links and no HTML.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## chaoskit: %s %s\n\n%s\n\n", mark(r.Verdict), upper(r.Verdict), Summary(r))
	b.WriteString("| Scenario | Contract | Window | Check | Measured | Expected | Verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, s := range r.Scenarios {
		if len(s.Contracts) == 0 {
			fmt.Fprintf(&b, "| %s | – | – | – | – | – | %s %s |\n", cell(s.Name), mark(s.Verdict), s.Verdict)
		}
		for _, c := range s.Contracts {
			if len(c.Checks) == 0 {
				fmt.Fprintf(&b, "| %s | %s | %s | – | %s | %s | %s %s |\n", cell(s.Name), cell(c.Name), cell(c.Window), cell(c.Measured), cell(c.Expected), mark(c.Outcome), c.Outcome)
			}
			for _, ch := range c.Checks {
				o := ch.Outcome
				if c.Outcome == contract.Inconclusive {
					o = contract.Inconclusive
				}
				fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %s | %s | %s %s |\n", cell(s.Name), cell(c.Name), cell(c.Window),
					strings.ReplaceAll(ch.Expect, "|", `\|`), cell(ch.Measured), cell(ch.Expected), mark(o), o)
			}
		}
	}
	var bills strings.Builder
	for _, s := range r.Scenarios {
		for _, bl := range s.Bills {
			fmt.Fprintf(&bills, "| %s |", cell(s.Name))
			for _, c := range billCells(bl) {
				fmt.Fprintf(&bills, " %s |", cell(c))
			}
			bills.WriteString("\n")
		}
	}
	if bills.Len() > 0 {
		b.WriteString("\n### Bill per fault\n\nWhat each fault cost the users: the requests sent while it was on, by what they got.\n\n| Scenario | " + strings.Join(billHeader, " | ") + " |\n|---" + strings.Repeat("|---", len(billHeader)) + "|\n")
		b.WriteString(bills.String())
	}
	var evidence strings.Builder
	for _, s := range r.Scenarios {
		if s.Error != "" {
			fmt.Fprintf(&evidence, "**%s**: the run failed: %s\n\n", s.Name, s.Error)
		}
		for _, f := range s.Findings {
			fmt.Fprintf(&evidence, "⚠️ **%s**: finding: %s\n\n", s.Name, f.Message)
		}
		for _, c := range s.Contracts {
			if c.Outcome == contract.Pass {
				for _, n := range c.Notes {
					fmt.Fprintf(&evidence, "**%s / %s**: note: %s\n\n", s.Name, c.Name, n)
				}
				continue
			}
			fmt.Fprintf(&evidence, "#### %s %s / %s: %s\n\n", mark(c.Outcome), s.Name, c.Name, c.Outcome)
			fmt.Fprintf(&evidence, "Window `%s`, %d requests.", c.Window, c.Samples)
			if c.Reason != "" {
				fmt.Fprintf(&evidence, " Inconclusive: %s.", strings.TrimSuffix(c.Reason, "."))
			}
			for _, n := range c.Notes {
				fmt.Fprintf(&evidence, " Note: %s.", n)
			}
			evidence.WriteString("\n\n")
			for _, ch := range c.Checks {
				if ch.Outcome != contract.Fail {
					continue
				}
				fmt.Fprintf(&evidence, "`%s`: measured **%s**, expected %s (%d samples).\n\n", ch.Expect, ch.Measured, ch.Expected, ch.Samples)
				if len(ch.Violations) == 0 {
					continue
				}
				evidence.WriteString("| At | Target | Status | Class | Faults on | Detail |\n|---|---|---|---|---|---|\n")
				for _, v := range ch.Violations {
					fmt.Fprintf(&evidence, "| +%v | %s | %s | %s | %s | %s |\n", v.Offset.Round(time.Millisecond), cell(v.Target),
						cell(statusText(v.Status, v.Error)), classText(v), cell(strings.Join(v.Faults, ", ")), cell(v.Detail))
				}
				evidence.WriteString("\n")
			}
		}
	}
	if evidence.Len() > 0 {
		b.WriteString("\n### Evidence\n\n")
		b.WriteString(evidence.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func classText(v contract.Violation) string {
	if v.Class == contract.Fallback && v.Source != "" {
		return fmt.Sprintf("%s (%s)", v.Class, v.Source)
	}
	return string(v.Class)
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	if s == "" {
		return "–"
	}
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func mark(o contract.Outcome) string {
	switch o {
	case contract.Pass:
		return "✅"
	case contract.Fail:
		return "❌"
	}
	return "⚠️"
}
