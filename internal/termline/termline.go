// Package termline fits chaoskit's lines to a terminal: a live line, the
// one redrawn in place, is cut to the width so that it never wraps (a
// wrapped line leaves its first rows behind at every redraw); a line that
// stays is wrapped at spaces, so that no figure is split across rows.
//
// Widths count runes: chaoskit's lines hold no wide characters and no
// colour codes, and each box-drawing rune takes one column.
package termline

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Cut returns s cut to at most width-1 columns, with "…" where it was cut:
// the last column stays free, since a terminal that has written its last
// column wraps at the next character. Width 0 or less means no limit.
func Cut(s string, width int) string {
	if width <= 0 {
		return s
	}
	room := width - 1
	if utf8.RuneCountInString(s) <= room {
		return s
	}
	if room <= 1 {
		return ""
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:room-1]), " ") + "…"
}

// minKept is the fewest columns of s that CutKeeping keeps beside its
// tail, enough for the start of a live line (the phase and its clock,
// which say more than the tail); a narrower terminal cuts the line as Cut
// does.
const minKept = 40

// CutKeeping returns s and then tail, two spaces apart, in at most width-1
// columns as Cut does, cutting s rather than tail, and between its fields
// (runs of two spaces) where one is far enough in: tail is what must stay
// in view when the line is too long (the overall progress at the end of a
// live line). When the width leaves s fewer than minKept columns, s and
// tail are cut together as Cut does. An empty tail is s cut; width 0 or
// less means no limit.
func CutKeeping(s, tail string, width int) string {
	if tail == "" {
		return Cut(s, width)
	}
	whole := s + "  " + tail
	room := width - 1
	if width <= 0 || utf8.RuneCountInString(whole) <= room {
		return whole
	}
	keep := room - 2 - utf8.RuneCountInString(tail)
	if keep < minKept {
		return Cut(whole, width)
	}
	body := Cut(s, keep+1)
	// Cut between the fields of s (two spaces apart), not inside one.
	if cut, ok := strings.CutSuffix(body, "…"); ok {
		if i := strings.LastIndex(strings.TrimRight(cut, " "), "  "); i >= minKept {
			body = strings.TrimRight(cut[:i], " ") + " …"
		}
	}
	return body + "  " + tail
}

// Wrap breaks s into rows of at most width-1 columns, at spaces, the rows
// after the first indented by indent; a word longer than a row stays
// whole. Width 0 or less means no limit. Runs of spaces inside a row are
// kept, so that columns made with padding still line up on the first row.
func Wrap(s string, width int, indent string) []string {
	room := width - 1
	if width <= 0 || utf8.RuneCountInString(s) <= room {
		return []string{s}
	}
	var rows []string
	cur := ""
	// Words keep the spaces before them, so that padding survives.
	for _, w := range splitKeepingSpaces(s) {
		word := w
		if cur == "" && len(rows) > 0 {
			word = indent + strings.TrimLeft(w, " ")
		}
		if cur != "" && utf8.RuneCountInString(cur)+utf8.RuneCountInString(w) > room {
			rows = append(rows, strings.TrimRight(cur, " "))
			cur = indent + strings.TrimLeft(w, " ")
			continue
		}
		cur += word
	}
	if cur != "" {
		rows = append(rows, strings.TrimRight(cur, " "))
	}
	return rows
}

// splitKeepingSpaces splits s before each word, each piece holding the
// spaces in front of its word.
func splitKeepingSpaces(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] != ' ' && s[i-1] == ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

// Writer wraps each line written to it with Wrap before it passes it on;
// a write that starts with a carriage return (a live line redrawn in
// place, already cut) passes through as it is, and so does a partial line
// until its end comes.
type Writer struct {
	w      io.Writer
	width  int
	indent string
	mu     sync.Mutex
	buf    []byte
}

// NewWriter returns a Writer onto w for a terminal width columns wide (0:
// no limit), continuation rows indented by indent.
func NewWriter(w io.Writer, width int, indent string) *Writer {
	return &Writer{w: w, width: width, indent: indent}
}

func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.width <= 0 || (len(t.buf) == 0 && len(p) > 0 && p[0] == '\r') {
		return t.w.Write(p)
	}
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(t.buf[:i])
		t.buf = t.buf[i+1:]
		for _, row := range Wrap(line, t.width, t.indent) {
			if _, err := io.WriteString(t.w, row+"\n"); err != nil {
				return len(p), err
			}
		}
	}
}
