package reports

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chaoskit/chaoskit/contract"
)

// wideReport is the fixture with the long names and checks of the bundled
// suite, whose table is 300 columns wide.
func wideReport(t *testing.T) *Report {
	t.Helper()
	r := fixtureReport(t)
	s := ScenarioReport{Name: "retry-storm-budget", File: "scenarios/retry-storm-budget.yaml", RunDir: "retry-storm-budget", Verdict: contract.Pass}
	s.Contracts = []contract.Verdict{
		{Name: "retries stay within their budget", Phase: "upstream-errors", Window: "upstream-errors +500ms until fault off", Outcome: contract.Pass,
			Checks: []contract.CheckResult{{Expect: `increase("recommendations.upstream_calls") <= 1.1 * count + 0.1 * rps`, Outcome: contract.Pass,
				Measured: "437 (from 200 to 637 over 4s, 400 requests)", Expected: "<= 450 (1.1 * count + 0.1 * rps)"}}},
		{Name: "users still get an answer, the default list where the budget says no", Phase: "upstream-errors", Window: "upstream-errors", Outcome: contract.Pass,
			Checks: []contract.CheckResult{{Expect: `status == 200 for >= 99%`, Outcome: contract.Pass, Measured: "100% (400/400)", Expected: ">= 99%"}}},
	}
	r.Scenarios = append(r.Scenarios, s)
	return r
}

// ansiCodes matches the colour codes paint writes.
var ansiCodes = regexp.MustCompile("\x1b\\[[0-9;]*m")

// columns is how wide a line shows in a terminal: its runes, colours left
// out. The table holds no wide characters, and each box-drawing rune takes
// one column.
func columns(line string) int { return utf8.RuneCountInString(ansiCodes.ReplaceAllString(line, "")) }

// tableColumn is the text of the table's column named header, its lines
// top to bottom joined with no space, as is want's.
func tableColumn(t *testing.T, out, header string) string {
	t.Helper()
	col := -1
	var b strings.Builder
	inHeader := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "├") {
			inHeader = false
		}
		if !strings.HasPrefix(line, "│") || inHeader {
			continue
		}
		cells := strings.Split(strings.Trim(line, "│"), "│")
		if col < 0 {
			for i, c := range cells {
				if strings.TrimSpace(c) == header {
					col = i
				}
			}
			if col < 0 {
				t.Fatalf("no column %s in %q", header, line)
			}
			inHeader = true
			continue
		}
		b.WriteString(strings.Join(strings.Fields(cells[col]), ""))
	}
	return b.String()
}

func TestTableFitsWidth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(*testing.T) *Report
		width  int
		folded bool
	}{
		{"bundled-like at 80", wideReport, 80, true},
		{"bundled-like at 120", wideReport, 120, true},
		{"bundled-like at 200", wideReport, 200, true},
		{"bundled-like unlimited", wideReport, 0, false},
		{"fixture at 80", func(t *testing.T) *Report { return fixtureReport(t) }, 80, true},
		{"fixture at 120", func(t *testing.T) *Report { return fixtureReport(t) }, 120, true},
		{"fixture at 200", func(t *testing.T) *Report { return fixtureReport(t) }, 200, false},
	} {
		for _, color := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s color=%v", tc.name, color), func(t *testing.T) {
				r := tc.report(t)
				var buf bytes.Buffer
				if err := WriteTable(&buf, r, TableOptions{Dir: "out", Width: tc.width, Color: color}); err != nil {
					t.Fatal(err)
				}
				out := buf.String()
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				widest := 0
				for _, l := range lines {
					widest = max(widest, columns(l))
					if tc.width > 0 && columns(l) > tc.width {
						t.Errorf("%d columns wide, more than %d: %q", columns(l), tc.width, l)
					}
				}
				if tc.width > 0 && widest < tc.width-25 && tc.folded {
					t.Errorf("the widest line is %d columns: the table does not use the %d it has", widest, tc.width)
				}
				// Every column is there, folded or not: nothing is left
				// out, and the header says which cell holds what.
				header := strings.ToUpper(lines[1] + lines[2])
				for _, h := range tableHeader {
					if !strings.Contains(header, " "+h+" ") {
						t.Errorf("column %s not shown:\n%s", h, out)
					}
				}
				if got := strings.Contains(lines[2], "window"); got != tc.folded {
					t.Errorf("folded: %v, want %v:\n%s", got, tc.folded, out)
				}
				flat := strings.Join(strings.Fields(out), " ")
				if strings.Contains(out, "left out") {
					t.Errorf("a note of columns left out:\n%s", out)
				}
				// Wrapping loses nothing: each column, read top to
				// bottom, holds every cell's words in order (a folded
				// MEASURED cell the measured then the expected figure).
				var checks, measured strings.Builder
				for _, row := range tableRows(r, false) {
					checks.WriteString(strings.Join(strings.Fields(row[colCheck]), ""))
					measured.WriteString(strings.Join(strings.Fields(row[colMeasured]), ""))
					if tc.folded {
						measured.WriteString(strings.Join(strings.Fields(row[colExpected]), ""))
					}
				}
				if got := tableColumn(t, out, "CHECK"); got != checks.String() {
					t.Errorf("CHECK column reads\n%s\nwant\n%s", got, checks.String())
				}
				if got := tableColumn(t, out, "MEASURED"); got != measured.String() {
					t.Errorf("MEASURED column reads\n%s\nwant\n%s", got, measured.String())
				}
				if tc.width == 0 && !strings.Contains(out, `increase("recommendations.upstream_calls") <= 1.1 * count + 0.1 * rps`) {
					t.Error("without a width a cell was wrapped")
				}
				if !strings.HasSuffix(out, Summary(r)+"\n") {
					t.Error("the summary is not the last line")
				}
				for _, want := range []string{"first violation of", "inconclusive: 400 requests", "run dir: out/db-timeout-serves-cache"} {
					if !strings.Contains(flat, want) {
						t.Errorf("the table lacks %q", want)
					}
				}
			})
		}
	}
}

// A terminal narrower than the columns that are never left out gets the
// table at its narrowest rather than an error.
func TestTableTooNarrow(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, wideReport(t), TableOptions{Width: 20}); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(buf.String(), "\n") {
		if columns(l) > 70 {
			t.Errorf("at width 20 a line is %d columns, more than the narrowest table: %q", columns(l), l)
		}
	}
}

func TestWrapText(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  []string
	}{
		{"p50 < 5ms", 20, []string{"p50 < 5ms"}},
		{"status == 200 for >= 99%", 10, []string{"status ==", "200 for >=", "99%"}},
		{`fallback("cache") >= 99%`, 12, []string{"fallback", `("cache") >=`, "99%"}},
		{"db-timeout-serves-cache", 16, []string{"db-timeout-", "serves-cache"}},
		{"abcdefghijklmnop", 6, []string{"abcdef", "ghijkl", "mnop"}},
		{"", 5, []string{""}},
	} {
		got := wrapText(tc.in, tc.width)
		if !slices.Equal(got, tc.want) {
			t.Errorf("wrapText(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
}
