package termline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tt := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 80, "short"},
		{"exactly ten", 12, "exactly ten"},
		{"exactly ten", 11, "exactly t…"},
		{"  recovery  1.2s/5.0s  812 req/s  primary 93%", 20, "  recovery  1.2s/5…"},
		{"anything", 0, "anything"},
		{"███░░ run 3", 6, "███░…"},
	} {
		if got := Cut(tt.in, tt.width); got != tt.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
		if tt.width > 0 && utf8.RuneCountInString(Cut(tt.in, tt.width)) >= tt.width {
			t.Errorf("Cut(%q, %d) fills the last column", tt.in, tt.width)
		}
	}
}

// The tail of a live line (the overall progress) stays in view; the line
// before it is what is cut.
func TestCutKeeping(t *testing.T) {
	line := "  recovery             12.3s/30.0s     480 req/s  primary  98.0%  fallback   2.0%"
	for _, tt := range []struct {
		s, tail string
		width   int
		want    string
	}{
		{"short", "2/3, 40s left", 80, "short  2/3, 40s left"},
		{line, "", 40, Cut(line, 40)},
		{line, "2/10, 1m40s left", 0, line + "  2/10, 1m40s left"},
		{line, "2/10, 1m40s left", 80, "  recovery             12.3s/30.0s     480 req/s  primary …  2/10, 1m40s left"},
		{line, "2/10, 1m40s left", 120, line + "  2/10, 1m40s left"},
		// Too narrow to keep both: cut as one line, the phase's clock
		// kept rather than the tail.
		{line, "2/10, 1m40s left", 40, "  recovery             12.3s/30.0s…"},
		{line, "8s left", 50, "  recovery             12.3s/30.0s…  8s left"},
	} {
		got := CutKeeping(tt.s, tt.tail, tt.width)
		if got != tt.want {
			t.Errorf("CutKeeping(%q, %q, %d) =\n%q, want\n%q", tt.s, tt.tail, tt.width, got, tt.want)
		}
		if tt.width > 0 && utf8.RuneCountInString(got) >= tt.width {
			t.Errorf("CutKeeping(…, %d) is %d columns: it fills the last one", tt.width, utf8.RuneCountInString(got))
		}
	}
}

// A phase line wraps between fields, never inside a figure.
func TestWrapKeepsFiguresWhole(t *testing.T) {
	line := "  recovery               5.00s   4000 requests    800 req/s (800/s)  primary 99.0%  fallback 1.0%  faults: demo/store/productQuery=timeout (ack 1.2ms)"
	for _, width := range []int{40, 80, 120} {
		rows := Wrap(line, width, "      ")
		for _, r := range rows {
			if n := utf8.RuneCountInString(r); n >= width {
				t.Errorf("width %d: row %q is %d columns", width, r, n)
			}
		}
		if got := strings.Join(strings.Fields(strings.Join(rows, " ")), " "); got != strings.Join(strings.Fields(line), " ") {
			t.Errorf("width %d: the words changed:\n%q", width, rows)
		}
		for _, r := range rows[1:] {
			if !strings.HasPrefix(r, "      ") {
				t.Errorf("width %d: row %q is not indented", width, r)
			}
		}
	}
	if rows := Wrap(line, 0, "  "); len(rows) != 1 {
		t.Errorf("no limit: %q", rows)
	}
	if rows := Wrap("  a  b", 80, ""); rows[0] != "  a  b" {
		t.Errorf("padding lost: %q", rows)
	}
}
