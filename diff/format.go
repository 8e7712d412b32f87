package diff

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// formatValue shows a figure's value in its unit: 42ms, 1.2s, 41.5%.
func formatValue(unit string, v float64) string {
	switch unit {
	case UnitMs:
		return fmtDur(time.Duration(v * float64(time.Millisecond)))
	case UnitSeconds:
		return fmtDur(time.Duration(v * float64(time.Second)))
	case UnitPercent:
		return strconv.FormatFloat(v, 'f', 1, 64) + "%"
	case UnitCount:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case UnitRate:
		return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
	case UnitVerdict:
		switch {
		case v >= 1:
			return "pass"
		case v <= 0:
			return "fail"
		}
		return "split"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// formatDelta shows a difference in its unit, signed: +860ms, -40 pts.
func formatDelta(unit string, d float64) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	switch unit {
	case UnitPercent:
		return sign + strconv.FormatFloat(d, 'f', 1, 64) + " pts"
	case UnitVerdict:
		return sign + strconv.FormatFloat(d, 'f', 1, 64)
	}
	return sign + formatValue(unit, d)
}

// formatBand shows a band: ±12ms.
func formatBand(unit string, b float64) string {
	if unit == UnitPercent {
		return "±" + strconv.FormatFloat(b, 'f', 1, 64) + " pts"
	}
	if unit == UnitVerdict {
		return "±" + strconv.FormatFloat(b, 'f', 1, 64)
	}
	return "±" + formatValue(unit, b)
}

// sideText shows one side of a figure: its median, how many repetitions
// measured it when not all did, the verdicts counted for a verdict.
func sideText(f Figure, s Side) string {
	switch {
	case s.Missing:
		return "—"
	case !s.known():
		return "unknown (" + s.Reason + ")"
	}
	var t string
	if f.Unit == UnitVerdict {
		pass := 0
		for _, v := range s.Values {
			if v >= 1 {
				pass++
			}
		}
		t = fmt.Sprintf("pass %d/%d", pass, len(s.Values)+s.Unknown)
		if s.Unknown > 0 {
			t += fmt.Sprintf(", %d inconclusive", s.Unknown)
		}
		return t
	}
	t = formatValue(f.Unit, s.Median)
	if s.Unknown > 0 {
		t += fmt.Sprintf(" (%d of %d unknown)", s.Unknown, len(s.Values)+s.Unknown)
	}
	return t
}

// deltaText and bandText are empty when the word rests on no difference.
func deltaText(f Figure) string {
	if f.Word == New || f.Word == Gone || f.Word == Unknown {
		return ""
	}
	return formatDelta(f.Unit, f.Delta)
}

func bandText(f Figure) string {
	if f.Word == New || f.Word == Gone || f.Word == Unknown {
		return ""
	}
	return formatBand(f.Unit, f.Band)
}

// fmtDur shows a duration with three significant digits: 42ms, 1.23s.
func fmtDur(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Microsecond:
		s = d.String()
	case d < time.Millisecond:
		s = trim(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		s = trim(float64(d)/float64(time.Millisecond)) + "ms"
	default:
		s = trim(d.Seconds()) + "s"
	}
	if neg {
		return "-" + s
	}
	return s
}

func trim(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// billText is a bill in a cell: "41/412 failed, 0 degraded, 0 stale, 0
// refused · p99 +860ms · degraded in 12ms · recovered in 1.2s · 0 lost, 0
// unknown writes".
func billText(b *contract.Bill) string {
	if b == nil {
		return "—"
	}
	parts := []string{fmt.Sprintf("%d/%d failed, %d degraded, %d stale, %d refused", b.Failed, b.Requests, b.Degraded, b.Stale, b.Refused)}
	if b.P99Added != nil {
		parts = append(parts, "p99 "+formatDelta(UnitMs, float64(*b.P99Added)/float64(time.Millisecond)))
	}
	if b.DegradedIn != nil {
		parts = append(parts, "degraded in "+fmtDur(*b.DegradedIn))
	} else if b.DegradeUnknown != "" {
		parts = append(parts, "time to degrade unknown ("+b.DegradeUnknown+")")
	}
	switch {
	case b.Never && b.Recovered != nil:
		parts = append(parts, "not recovered in "+fmtDur(*b.Recovered))
	case b.Recovered != nil:
		parts = append(parts, "recovered in "+fmtDur(*b.Recovered))
	}
	if b.Writes != nil {
		parts = append(parts, fmt.Sprintf("%d lost, %d unknown writes", b.Writes.Lost, b.Writes.Unknown))
	}
	return strings.Join(parts, " · ")
}

// summaryOf is the regressions of a scenario grouped by where they are
// (a fault, a phase, a contract): "db-timeout: p99 +860ms, share.fallback
// -40.0 pts".
func summaryOf(figs []Figure) []string {
	var order []string
	by := map[string][]string{}
	for _, f := range figs {
		where := f.Scenario
		switch {
		case f.Fault != "":
			where += ", under " + f.Fault
		case f.Contract != "":
			where += ", contract " + f.Contract
		case f.Phase != "":
			where += ", phase " + f.Phase
		}
		if _, ok := by[where]; !ok {
			order = append(order, where)
		}
		item := f.Name + " " + deltaText(f)
		if f.Unit == UnitVerdict {
			item = f.Name + " " + sideText(f, f.Base) + " → " + sideText(f, f.Head)
		}
		by[where] = append(by[where], item)
	}
	out := make([]string, len(order))
	for i, w := range order {
		out[i] = w + ": " + strings.Join(by[w], ", ")
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Headline is the comparison in one line: "2 regressions, 1 improvement,
// 140 the same, 3 unknown (3 base runs, 3 head runs)".
func (r *Result) Headline() string {
	parts := []string{plural(r.Count(Regressed), "regression", "regressions")}
	if n := r.Count(Improved); n > 0 {
		parts = append(parts, plural(n, "improvement", "improvements"))
	}
	parts = append(parts, fmt.Sprintf("%d the same", r.Count(Same)))
	for _, w := range []Word{Changed, New, Gone, Unknown} {
		if n := r.Count(w); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, w))
		}
	}
	return fmt.Sprintf("%s (%s, %s)", strings.Join(parts, ", "), plural(r.BaseRuns, "base run", "base runs"), plural(r.HeadRuns, "head run", "head runs"))
}
