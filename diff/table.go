package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// WriteJSON writes the result as indented JSON: every figure with both
// sides' values per repetition, its delta, band and word, and the bills.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Headline    string `json:"headline"`
		Regressions int    `json:"regressions"`
		*Result
	}{r.Headline(), len(r.regressions()), r})
}

// WriteTable writes the result for a terminal: the headline, each fault's
// bill on both sides, and every figure whose word is not same, fitted to
// width columns (0: no limit).
func (r *Result) WriteTable(w io.Writer, width int) error {
	var b strings.Builder
	b.WriteString("diff: " + r.Headline() + "\n")
	if len(r.Bills) > 0 {
		b.WriteString("\nbill per fault\n")
		for _, p := range r.Bills {
			fmt.Fprintf(&b, "  %s · %s\n", p.Scenario, billWhere(p))
			fmt.Fprintf(&b, "    base  %s\n", billText(p.Base))
			fmt.Fprintf(&b, "    head  %s\n", billText(p.Head))
		}
	}
	rows := [][]string{{"FIGURE", "BASE", "HEAD", "DELTA", "BAND", "WORD"}}
	same := 0
	scenario := ""
	for _, f := range r.Figures {
		if f.Word == Same {
			same++
			continue
		}
		if f.Scenario != scenario {
			scenario = f.Scenario
			rows = append(rows, []string{"[" + scenario + "]", "", "", "", "", ""})
		}
		rows = append(rows, []string{f.Key.String(), sideText(f, f.Base), sideText(f, f.Head), deltaText(f), bandText(f), string(f.Word)})
	}
	if len(rows) > 1 {
		b.WriteString("\n")
		writeColumns(&b, rows, width)
	}
	fmt.Fprintf(&b, "\n%d figures the same on both sides (all of them: --format json)\n", same)
	_, err := io.WriteString(w, b.String())
	return err
}

func billWhere(p BillPair) string {
	s := "fault " + p.Fault
	if p.Phase != "" {
		s += " in " + p.Phase
	}
	return s
}

// writeColumns writes rows in aligned columns, two spaces apart; when
// width is set, the widest columns are cut (with …) until a row fits.
func writeColumns(b *strings.Builder, rows [][]string, width int) {
	n := len(rows[0])
	ws := make([]int, n)
	for _, r := range rows {
		for i, c := range r {
			ws[i] = max(ws[i], utf8.RuneCountInString(c))
		}
	}
	if width > 0 {
		for total(ws) > width {
			widest := 0
			for i := range ws {
				if ws[i] > ws[widest] {
					widest = i
				}
			}
			if ws[widest] <= 8 {
				break
			}
			ws[widest]--
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			c = cut(c, ws[i])
			line.WriteString(c)
			if i < n-1 {
				line.WriteString(strings.Repeat(" ", ws[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

func total(ws []int) int {
	t := 2 * (len(ws) - 1)
	for _, w := range ws {
		t += w
	}
	return t
}

func cut(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:w-1]) + "…"
}
