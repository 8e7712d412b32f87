package diff

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
)

func TestHTMLBaseAndHeadOnOneAxis(t *testing.T) {
	r := regressedResult(t)
	side := func(name string) reports.ComparedSide {
		s := reports.ScenarioReport{Name: "db-timeout", Verdict: contract.Pass}
		return reports.ComparedSide{Name: name, Label: name + ": run 1 of 3", Report: reports.New(time.Time{}, []reports.ScenarioReport{s})}
	}
	var b strings.Builder
	if err := r.WriteHTML(&b, side("base"), side("head")); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"<h3>Bill per fault, base and head</h3>", "db/timeout", `<td class="regressed">regressed</td>`, "figures the same on both sides</summary>",
		// The run report's page: its badge, each side's headline figures
		// and verdicts, its one script.
		`<span class="badge fail">REGRESSED</span>`, `id="base-headline"`, `id="head-headline"`, "Verdict per scenario", "<script>",
		`<section id="base-scenario-db-timeout">`, `<section id="head-scenario-db-timeout">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// The p99's row: three base dots left of three head dots on one axis.
	row := ""
	for _, tr := range strings.Split(page, "<tr>") {
		if strings.Contains(tr, "<td>db-timeout · p99</td>") {
			row = tr
		}
	}
	if row == "" {
		t.Fatal("no row for db-timeout · p99")
	}
	xs := func(class string) []float64 {
		var out []float64
		for _, m := range regexp.MustCompile(`<circle cx="([0-9.]+)" cy="[0-9.]+" r="3.5" class="`+class+`"`).FindAllStringSubmatch(row, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			out = append(out, v)
		}
		return out
	}
	base, head := xs("dot-base"), xs("dot-head")
	if len(base) != 3 || len(head) != 3 {
		t.Fatalf("%d base and %d head dots, want 3 and 3", len(base), len(head))
	}
	for _, bx := range base {
		for _, hx := range head {
			if bx >= hx || hx > stripWidth {
				t.Errorf("base at %v, head at %v: a slower head is not right of the base within the strip", bx, hx)
			}
		}
	}
}
