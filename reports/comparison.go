package reports

import (
	_ "embed"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// Comparison is a page comparing two builds under the same scenarios
// (`chaoskit diff`), made of the run report's parts: each side's headline
// figures, the verdict of every scenario on each side, each side's
// sections with their charts on one time axis, and the comparison's own
// detail between them.
type Comparison struct {
	// Summary is the comparison's one-line answer; Badge its word
	// ("regressed", "same"…), coloured as Verdict.
	Summary string
	Badge   string
	Verdict contract.Outcome
	// Base and Head are the sides, each with one run of every scenario.
	Base, Head ComparedSide
	// Detail is the comparison's own section (its figures and bills), as
	// HTML its maker escaped; Style is the CSS that section needs.
	Detail template.HTML
	Style  template.CSS
}

// ComparedSide is one side of a Comparison.
type ComparedSide struct {
	// Name is "base" or "head"; Label says what the side ran and which of
	// its runs the page shows ("revision abc123, run 1 of 3").
	Name, Label string
	Report      *Report
}

//go:embed comparison.html.tmpl
var comparisonSource string

func init() {
	template.Must(htmlTemplate.New("comparison").Parse(comparisonSource))
}

// comparedScenario is one scenario of a Comparison, rendered for each
// side that ran it (nil for a side that did not).
type comparedScenario struct {
	Name       string
	Base, Head *htmlScenario
}

// WriteComparisonHTML writes c as one self-contained page, with the run
// report's styles, figures, sections and script (zoom and crosshair).
// A scenario's charts on the two sides share one time axis, the longer
// run's.
func WriteComparisonHTML(w io.Writer, c Comparison) error {
	data := struct {
		Comparison
		BadgeText                  string
		BaseHeadline, HeadHeadline headline
		Scenarios                  []comparedScenario
	}{Comparison: c, BadgeText: strings.ToUpper(c.Badge), BaseHeadline: headlineOf(c.Base.Report), HeadHeadline: headlineOf(c.Head.Report)}
	byName := map[string]int{}
	var order []string
	sides := map[string][2]*ScenarioReport{}
	for i, side := range []*Report{c.Base.Report, c.Head.Report} {
		for j := range side.Scenarios {
			s := &side.Scenarios[j]
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = len(order)
				order = append(order, s.Name)
			}
			pair := sides[s.Name]
			if pair[i] == nil {
				pair[i] = s
			}
			sides[s.Name] = pair
		}
	}
	ids := map[string]bool{}
	for _, name := range order {
		pair := sides[name]
		var end time.Duration
		for _, s := range pair {
			if s != nil && s.Series != nil {
				end = max(end, s.Series.End)
			}
		}
		id := anchor(name, ids)
		cs := comparedScenario{Name: name}
		for i, s := range pair {
			if s == nil {
				continue
			}
			side := []ComparedSide{c.Base, c.Head}[i]
			shown := *s
			shown.Name = side.Name + ": " + s.Name
			hs, err := newHTMLScenario(shown, side.Name+"-"+id, end)
			if err != nil {
				return err
			}
			if i == 0 {
				cs.Base = &hs
			} else {
				cs.Head = &hs
			}
		}
		data.Scenarios = append(data.Scenarios, cs)
	}
	return htmlTemplate.ExecuteTemplate(w, "comparison", data)
}
