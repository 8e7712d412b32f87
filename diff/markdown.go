package diff

import (
	"fmt"
	"io"
	"strings"
)

// MaxMarkdown is the most characters a GitHub comment holds; WriteMarkdown
// stays within it.
const MaxMarkdown = 65536

// markdownBudget leaves room under MaxMarkdown for what follows the
// folded figures.
const markdownBudget = MaxMarkdown - 2048

// WriteMarkdown writes the result for a pull-request comment
// (GitHub-flavoured Markdown): the headline and the regressions grouped
// by where they are on top, then each fault's bill on both sides and
// every figure that is not the same, folded in <details>. It never
// writes more than MaxMarkdown characters: figures past the budget are
// left out, and the comment says how many.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	reg := r.regressions()
	if len(reg) > 0 {
		fmt.Fprintf(&b, "### chaoskit diff: %s\n\n", plural(len(reg), "regression", "regressions"))
	} else {
		b.WriteString("### chaoskit diff: no regression beyond noise\n\n")
	}
	b.WriteString(mdEscape(r.Headline()) + "\n\n")
	writeSummary(&b, "- **regressed** ", summaryOf(reg))
	var imp []Figure
	for _, f := range r.Figures {
		if f.Word == Improved {
			imp = append(imp, f)
		}
	}
	writeSummary(&b, "- improved ", summaryOf(imp))
	if len(reg)+len(imp) > 0 {
		b.WriteString("\n")
	}
	if len(r.Bills) > 0 {
		b.WriteString("<details><summary>Bill per fault, base and head</summary>\n\n")
		b.WriteString("| scenario | fault | base | head |\n|---|---|---|---|\n")
		for _, p := range r.Bills {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCell(p.Scenario), mdCell(billWhere(p)), mdCell(billText(p.Base)), mdCell(billText(p.Head)))
		}
		b.WriteString("\n</details>\n\n")
	}
	var rows []Figure
	same := 0
	for _, f := range r.Figures {
		if f.Word == Same {
			same++
			continue
		}
		rows = append(rows, f)
	}
	if len(rows) > 0 {
		fmt.Fprintf(&b, "<details><summary>%s that moved or could not be compared</summary>\n\n", plural(len(rows), "figure", "figures"))
		b.WriteString("| scenario | figure | base | head | delta | band | word |\n|---|---|---|---|---|---|---|\n")
		left := 0
		for i, f := range rows {
			line := fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(f.Scenario), mdCell(f.Key.String()), mdCell(sideText(f, f.Base)), mdCell(sideText(f, f.Head)),
				mdCell(deltaText(f)), mdCell(bandText(f)), wordMark(f.Word))
			if b.Len()+len(line) > markdownBudget {
				left = len(rows) - i
				break
			}
			b.WriteString(line)
		}
		if left > 0 {
			fmt.Fprintf(&b, "\n%s left out to fit a comment; the JSON report has them all.\n", plural(left, "figure", "figures"))
		}
		b.WriteString("\n</details>\n\n")
	}
	fmt.Fprintf(&b, "%d figures the same on both sides. A difference counts only beyond its noise band (the larger of the figure's minimum effect and the two sides' spreads).\n", same)
	out := b.String()
	if len(out) > MaxMarkdown {
		// Only a headline or bills of extraordinary size get here.
		out = out[:MaxMarkdown-len(cutNote)] + cutNote
	}
	_, err := io.WriteString(w, out)
	return err
}

// maxSummary bounds the summary lines above the fold, and the characters
// of each: the top of a comment is read at a glance.
const (
	maxSummary     = 10
	maxSummaryLine = 300
)

func writeSummary(b *strings.Builder, prefix string, lines []string) {
	for i, s := range lines {
		if i == maxSummary {
			fmt.Fprintf(b, "- and %d more (below)\n", len(lines)-i)
			return
		}
		if r := []rune(s); len(r) > maxSummaryLine {
			s = string(r[:maxSummaryLine-1]) + "…"
		}
		b.WriteString(prefix + mdEscape(s) + "\n")
	}
}

const cutNote = "\n\n(cut to fit a comment; see the JSON report)\n"

func wordMark(w Word) string {
	switch w {
	case Regressed:
		return "**regressed**"
	case Improved:
		return "_improved_"
	}
	return string(w)
}

// mdCell makes s safe in a table cell: no pipe ends the cell, no newline
// ends the row, no HTML or emphasis is read into it.
func mdCell(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	return mdEscape(s)
}

// mdEscape escapes what Markdown or HTML would read in plain text.
func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "\\`", "[", `\[`, "]", `\]`).Replace(s)
}
