package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
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
	// Width is the width in columns the table keeps within: a table
	// wider than that folds the window under the contract's name and the
	// expected figure under the measured one, and wraps long cells at
	// spaces, so that no line is wider and nothing is left out. Zero means
	// no limit. Below about 60 columns, where the folded columns do not fit
	// at hardMin, the table is printed at its narrowest and its lines are
	// wider.
	Width int
}

// The columns of the table, in order.
const (
	colScenario = iota
	colContract
	colWindow
	colCheck
	colMeasured
	colExpected
	colVerdict
	numColumns
)

var tableHeader = [numColumns]string{"SCENARIO", "CONTRACT", "WINDOW", "CHECK", "MEASURED", "EXPECTED", "VERDICT"}

// The folded table, for a width the whole one does not fit: the window
// goes under the contract's name (it mostly repeats the phase the contract
// is named for) and the expected figure under the measured one, each cell
// two lines; the header says so.
var (
	allColumns    = []int{colScenario, colContract, colWindow, colCheck, colMeasured, colExpected, colVerdict}
	foldedColumns = []int{colScenario, colContract, colCheck, colMeasured, colVerdict}
	foldedHeader  = [numColumns]string{"SCENARIO", "CONTRACT\nwindow", "", "CHECK", "MEASURED\nexpected", "", "VERDICT"}
)

// comfortable is the width, in columns, a column wraps down to before the
// columns wrap further, down to hardMin. VERDICT never wraps.
var comfortable = [numColumns]int{16, 18, 14, 22, 16, 14, 0}

// hardMin is the narrowest a wrapping column gets, when even the columns
// that cannot be left out do not fit comfortably.
const hardMin = 6

// WriteTable renders one row per expectation of every contract: scenario,
// contract, window, check, measured, expected, verdict; then the evidence
// of what did not pass and a summary line. With a Width, see TableOptions.
func WriteTable(w io.Writer, r *Report, opts TableOptions) error {
	rows := tableRows(r, opts.Color)
	header := tableHeader
	keep := allColumns
	if opts.Width > 0 && tableWidth(columnsOf(naturalWidths(rows, header), keep)) > opts.Width {
		rows, header, keep = foldRows(rows), foldedHeader, foldedColumns
	}
	layout := fitColumns(rows, header, keep, opts.Width)
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowMergeMode(tw.MergeHierarchical),
	)
	t.Header(layout.pick(header[:], nil))
	for _, row := range rows {
		_ = t.Append(layout.pick(row[:], &layout.widths))
	}
	if err := t.Render(); err != nil {
		return err
	}
	line := func(format string, args ...any) {
		WriteWrapped(w, fmt.Sprintf(format, args...), opts.Width)
	}
	for _, s := range r.Scenarios {
		if s.Error != "" {
			line("%s: %s", s.Name, s.Error)
		}
		for _, c := range s.Contracts {
			if c.Reason != "" {
				line("%s / %s: inconclusive: %s", s.Name, c.Name, c.Reason)
			}
			for _, n := range c.Notes {
				line("%s / %s: note: %s", s.Name, c.Name, n)
			}
			for _, ch := range c.Checks {
				if ch.Outcome != contract.Fail || len(ch.Violations) == 0 {
					continue
				}
				line("%s / %s: first violation of %q: %s", s.Name, c.Name, ch.Expect, ViolationText(ch.Violations[0]))
			}
		}
		for _, f := range s.Findings {
			line("%s: finding: %s", s.Name, f.Message)
		}
		for _, b := range s.Bills {
			line("%s: %s", s.Name, billLine(b))
		}
	}
	for _, s := range r.Scenarios {
		switch {
		case s.RunDir == "":
		case filepath.IsAbs(s.RunDir):
			line("run dir: %s", s.RunDir)
		default:
			line("run dir: %s", filepath.Join(opts.Dir, s.RunDir))
		}
	}
	line("%s", Summary(r))
	return nil
}

// tableRows are the table's cells, a row per expectation.
func tableRows(r *Report, color bool) [][numColumns]string {
	var rows [][numColumns]string
	for _, s := range r.Scenarios {
		if len(s.Contracts) == 0 {
			rows = append(rows, [numColumns]string{s.Name, "-", "-", "-", "-", "-", paint(s.Verdict, color)})
		}
		for _, c := range s.Contracts {
			if len(c.Checks) == 0 {
				rows = append(rows, [numColumns]string{s.Name, c.Name, c.Window, "-", c.Measured, c.Expected, paint(c.Outcome, color)})
			}
			for _, ch := range c.Checks {
				verdict := ch.Outcome
				if c.Outcome == contract.Inconclusive {
					verdict = contract.Inconclusive
				}
				rows = append(rows, [numColumns]string{s.Name, c.Name, c.Window, ch.Expect, ch.Measured, ch.Expected, paint(verdict, color)})
			}
		}
	}
	return rows
}

// foldRows folds each row as foldedHeader says: the window under the
// contract, the expected figure under the measured one.
func foldRows(rows [][numColumns]string) [][numColumns]string {
	out := make([][numColumns]string, len(rows))
	for i, row := range rows {
		row[colContract] += "\n" + row[colWindow]
		row[colMeasured] += "\n" + row[colExpected]
		row[colWindow], row[colExpected] = "", ""
		out[i] = row
	}
	return out
}

// tableLayout says which columns are shown and how wide their content may
// be (0: as wide as it is).
type tableLayout struct {
	keep   []int
	widths [numColumns]int
}

// pick returns the kept columns of row, each line of a cell wrapped to its
// width when widths is given.
func (l tableLayout) pick(row []string, widths *[numColumns]int) []string {
	out := make([]string, 0, len(l.keep))
	for _, c := range l.keep {
		cell := row[c]
		if widths != nil && widths[c] > 0 {
			var lines []string
			for _, line := range strings.Split(cell, "\n") {
				lines = append(lines, wrapText(line, widths[c])...)
			}
			cell = strings.Join(lines, "\n")
		}
		out = append(out, cell)
	}
	return out
}

// naturalWidths is how wide each column is unwrapped: its widest line,
// header included.
func naturalWidths(rows [][numColumns]string, header [numColumns]string) [numColumns]int {
	var natural [numColumns]int
	for c := range numColumns {
		natural[c] = linesWidth(header[c])
	}
	for _, row := range rows {
		for c, cell := range row {
			natural[c] = max(natural[c], linesWidth(cell))
		}
	}
	return natural
}

// linesWidth is the width of the widest line of s.
func linesWidth(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		n = max(n, twwidth.Width(l))
	}
	return n
}

// The table's frame: a border left and right, a separator between
// columns, and one space of padding either side of each cell.
var (
	borderWidth = twwidth.Width("│")
	cellPadding = 2
)

// tableWidth is how wide a table of columns whose content is this wide
// is drawn.
func tableWidth(content []int) int {
	total := borderWidth * (len(content) + 1)
	for _, w := range content {
		total += w + cellPadding
	}
	return total
}

// fitColumns decides the layout of rows, the columns keep, in width
// columns: each column gets its comfortable width (or its natural width
// where that is less), or hardMin when even that does not fit, then the
// width left over is shared out evenly: each column in turn, the narrowest
// first, grows by one until it is as wide as its widest line or nothing
// is left. A column that fits as it is never wraps.
func fitColumns(rows [][numColumns]string, header [numColumns]string, keep []int, width int) tableLayout {
	natural := naturalWidths(rows, header)
	l := tableLayout{keep: keep}
	if width <= 0 || tableWidth(columnsOf(natural, keep)) <= width {
		return l
	}
	floor := func(c int, least int) int {
		if c == colVerdict {
			return natural[c]
		}
		return min(natural[c], max(least, linesWidth(header[c])))
	}
	mins := func(keep []int, hard bool) [numColumns]int {
		var m [numColumns]int
		for _, c := range keep {
			if hard {
				m[c] = floor(c, hardMin)
			} else {
				m[c] = floor(c, comfortable[c])
			}
		}
		return m
	}
	cur := mins(l.keep, false)
	if tableWidth(columnsOf(cur, l.keep)) > width {
		cur = mins(l.keep, true)
	}
	// Wrapped at a word boundary, a column may need less than it was
	// given: it keeps what its lines take, and the rest goes to the
	// columns that still wrap. A few rounds settle it.
	var settled [numColumns]bool
	for range 3 {
		left := width - tableWidth(columnsOf(cur, l.keep))
		for left > 0 {
			grow := -1
			for _, c := range l.keep {
				if !settled[c] && cur[c] < natural[c] && (grow < 0 || cur[c] < cur[grow]) {
					grow = c
				}
			}
			if grow < 0 {
				break
			}
			cur[grow]++
			left--
		}
		freed := false
		for _, c := range l.keep {
			if cur[c] >= natural[c] {
				continue
			}
			used := 0
			for _, row := range rows {
				for _, cl := range strings.Split(row[c], "\n") {
					for _, line := range wrapText(cl, cur[c]) {
						used = max(used, twwidth.Width(line))
					}
				}
			}
			if used < cur[c] {
				cur[c], settled[c], freed = used, true, true
			}
		}
		if !freed {
			break
		}
	}
	for _, c := range l.keep {
		if cur[c] < natural[c] {
			l.widths[c] = cur[c]
		}
	}
	return l
}

func columnsOf(widths [numColumns]int, cols []int) []int {
	out := make([]int, len(cols))
	for i, c := range cols {
		out[i] = widths[c]
	}
	return out
}

// wrapText breaks s into lines at most width columns wide: at spaces, and
// a word longer than a line after punctuation within it, or else where the
// line is full.
func wrapText(s string, width int) []string {
	if width <= 0 || twwidth.Width(s) <= width {
		return []string{s}
	}
	var lines []string
	var cur strings.Builder
	curW := 0
	flush := func() {
		lines = append(lines, cur.String())
		cur.Reset()
		curW = 0
	}
	for _, word := range strings.Fields(s) {
		ww := twwidth.Width(word)
		switch {
		case curW > 0 && curW+1+ww <= width:
			cur.WriteByte(' ')
			cur.WriteString(word)
			curW += 1 + ww
			continue
		case curW > 0:
			flush()
		}
		for ww > width {
			head, tail := breakWord(word, width)
			lines = append(lines, head)
			word, ww = tail, twwidth.Width(tail)
		}
		cur.WriteString(word)
		curW = ww
	}
	if curW > 0 || len(lines) == 0 {
		flush()
	}
	return lines
}

// breakWord splits a word wider than width where it reads best: at the
// last separator or parenthesis that leaves a head of at least half the
// width, else at the width.
func breakWord(word string, width int) (string, string) {
	runes := []rune(word)
	cut, w, lastPunct := 0, 0, -1
	for i, r := range runes {
		rw := twwidth.Width(string(r))
		if w+rw > width {
			break
		}
		w += rw
		cut = i + 1
		// After a separator, or before an opening parenthesis.
		switch {
		case w < width/2:
		case strings.ContainsRune(`.,;:/_-=`, r):
			lastPunct = i + 1
		case r == '(' && i > 0:
			lastPunct = i
		}
	}
	if lastPunct > 0 && lastPunct < len(runes) {
		cut = lastPunct
	}
	if cut == 0 {
		cut = 1
	}
	return string(runes[:cut]), string(runes[cut:])
}

// WriteWrapped writes a line of text for a terminal width columns wide (0:
// no limit), wrapped at spaces, or within a word too long for a line after
// a separator such as "/", with the lines after the first indented so
// that they read as one.
func WriteWrapped(w io.Writer, text string, width int) {
	const indent = "  "
	if width <= len(indent)+10 {
		fmt.Fprintln(w, text)
		return
	}
	// A row that fills the last column makes the terminal wrap it (or
	// hold the cursor at its edge): rows keep within width-1 columns, as
	// termline's do.
	room := width - 1
	lines := wrapText(text, room)
	fmt.Fprintln(w, lines[0])
	if len(lines) == 1 {
		return
	}
	rest := strings.Join(lines[1:], " ")
	for _, l := range wrapText(rest, room-len(indent)) {
		fmt.Fprintln(w, indent+l)
	}
}

// ViolationText describes one violating request in a line: when, what,
// how it ended, and the faults that were on.
func ViolationText(v contract.Violation) string {
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
	head := upper(r.Verdict)
	if r.Interrupted != "" {
		// The counts are of what ran before the stop: say so first.
		head = "INTERRUPTED (" + r.Interrupted + "), " + strings.ToLower(head) + " before it"
	}
	return fmt.Sprintf("%s: %d scenarios, %d contracts: %d passed, %d failed, %d inconclusive (%v)",
		head, len(r.Scenarios), pass+fail+inc, pass, fail, inc, r.Duration.Round(1e7))
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
