package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// The HTML report is one self-contained file: styles inline, charts as
// inline SVG, no script, no font, no image and no link that would make a
// browser reach the network.
//
//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"upper":   upper,
	"ms":      func(d time.Duration) string { return fmtMs(d) },
	"secs":    func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) },
	"offset":  func(d time.Duration) string { return "+" + d.Round(time.Millisecond).String() },
	"status":  statusText,
	"class":   classText,
	"join":    strings.Join,
	"pct":     func(n, total int) string { return pctText(n, total) },
	"classes": func() []contract.Class { return contract.Classes },
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	"date":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"failing": func(o contract.Outcome) bool { return o != contract.Pass },
	"checkOutcome": func(c contract.Verdict, ch contract.CheckResult) contract.Outcome {
		if c.Outcome == contract.Inconclusive {
			return contract.Inconclusive
		}
		return ch.Outcome
	},
	"hits": func(h *int64) string {
		if h == nil {
			return "–"
		}
		return fmt.Sprint(*h)
	},
}).Parse(htmlSource))

// htmlScenario is one scenario with its chart rendered.
type htmlScenario struct {
	ScenarioReport
	Chart template.HTML
}

// WriteHTML writes the report as one self-contained HTML page: per
// scenario a timeline chart, the verdict table, the evidence of every
// contract that did not pass, per-phase figures and fault timings.
func WriteHTML(w io.Writer, r *Report) error {
	data := struct {
		*Report
		Summary   string
		Scenarios []htmlScenario
	}{Report: r, Summary: Summary(r)}
	for _, s := range r.Scenarios {
		svg, err := chartSVG(s)
		if err != nil {
			return fmt.Errorf("chart of %s: %w", s.Name, err)
		}
		// The SVG comes from the plotting library, which escapes every
		// text it draws.
		data.Scenarios = append(data.Scenarios, htmlScenario{ScenarioReport: s, Chart: template.HTML(svg)})
	}
	return htmlTemplate.Execute(w, data)
}

func fmtMs(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.0fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

func pctText(n, total int) string {
	if total == 0 || n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(total))
}
