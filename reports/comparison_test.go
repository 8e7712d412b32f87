package reports

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/contract"
)

// TestComparisonIsTheReportPage: a comparison of two builds is the run
// report's page: each side's headline figures, the verdict of every
// scenario on both sides, each side's section with its chart, the same
// script, and the comparison's own section; the two charts of a scenario
// run on one time axis, the longer run's.
func TestComparisonIsTheReportPage(t *testing.T) {
	base := fixtureReport(t)
	head := fixtureReport(t)
	// The head's run is cut short: its axis must still be the base's.
	hs := &head.Scenarios[0]
	hs.Series.End /= 2
	hs.Verdict = contract.Fail
	var buf bytes.Buffer
	err := WriteComparisonHTML(&buf, Comparison{
		Summary: "1 regression", Badge: "regressed", Verdict: contract.Fail,
		Base:   ComparedSide{Name: "base", Label: "base (revision a1): run 1 of 3", Report: base},
		Head:   ComparedSide{Name: "head", Label: "head (revision b2): run 1 of 3", Report: head},
		Detail: template.HTML(`<section id="comparison"><h2>Base against head</h2></section>`),
		Style:  template.CSS(`.regressed { color: #b00020; }`),
	})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	name := base.Scenarios[0].Name
	for _, want := range []string{
		`<span class="badge fail">REGRESSED</span>`, "1 regression",
		`id="base-headline"`, `id="head-headline"`, `<div class="headline" id="headline">`,
		"Verdict per scenario", `<section id="comparison">`, ".regressed { color: #b00020; }",
		`<section id="base-scenario-`, `<section id="head-scenario-`,
		"base: " + name, "head: " + name, "base (revision a1): run 1 of 3",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d scripts, want the report's one", n)
	}
	ends := regexp.MustCompile(`<svg [^>]*class="timeline"[^>]*data-end="([0-9.]+)"`).FindAllStringSubmatch(page, -1)
	if len(ends) != 2 {
		t.Fatalf("%d timeline charts, want the base's and the head's", len(ends))
	}
	if ends[0][1] != ends[1][1] {
		t.Errorf("the charts end at %ss and %ss; a scenario's two charts share one axis", ends[0][1], ends[1][1])
	}
	// The verdicts per scenario link to each side's section.
	if !regexp.MustCompile(`href="#base-scenario-[^"]+"><span class="badge pass">PASS|href="#base-scenario-[^"]+"><span class="badge (fail|inconclusive)">`).MatchString(page) ||
		!strings.Contains(page, `href="#head-scenario-`) {
		t.Error("the verdict table does not link both sides' sections")
	}
}
