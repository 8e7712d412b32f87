package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
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
	// contractID is the anchor of a contract's evidence in its section.
	"contractID": func(scenario string, i int) string { return fmt.Sprintf("%s-contract-%d", scenario, i+1) },
	"checkOutcome": func(c contract.Verdict, ch contract.CheckResult) contract.Outcome {
		if c.Outcome == contract.Inconclusive {
			return contract.Inconclusive
		}
		return ch.Outcome
	},
	"faultWords": faultWords,
	"billHeader": func() []string { return billHeader },
	"billCells":  billCells,
	// rows is how many rows of the check table a contract takes.
	"rows": func(c contract.Verdict) int { return max(1, len(c.Checks)) },
	// scenarioRows is how many rows of the check table a scenario takes.
	"scenarioRows": func(s ScenarioReport) int {
		n := 0
		for _, c := range s.Contracts {
			n += max(1, len(c.Checks))
		}
		return max(1, n)
	},
	"hits": func(h *int64) string {
		if h == nil {
			return "–"
		}
		return fmt.Sprint(*h)
	},
}).Parse(htmlSource))

// htmlScenario is one scenario with its chart rendered and the anchor of
// its section.
type htmlScenario struct {
	ScenarioReport
	ID    string
	Chart template.HTML
	// Passed, Failed and Inconclusive count its contracts, for the table
	// of contents.
	Passed, Failed, Inconclusive int
}

// WriteHTML writes the report as one self-contained HTML page: per
// scenario a timeline chart, the verdict table, the evidence of every
// contract that did not pass, per-phase figures and fault timings.
func WriteHTML(w io.Writer, r *Report) error {
	data := struct {
		*Report
		Summary   string
		Headline  headline
		Scenarios []htmlScenario
	}{Report: r, Summary: Summary(r), Headline: headlineOf(r)}
	ids := map[string]bool{}
	for _, s := range r.Scenarios {
		hs, err := newHTMLScenario(s, anchor(s.Name, ids), 0)
		if err != nil {
			return err
		}
		data.Scenarios = append(data.Scenarios, hs)
	}
	return htmlTemplate.Execute(w, data)
}

// newHTMLScenario renders s's chart, its time axis running to end when
// that is later than the run's, and counts its verdicts.
func newHTMLScenario(s ScenarioReport, id string, end time.Duration) (htmlScenario, error) {
	svg, err := chartSVGTo(s, end)
	if err != nil {
		return htmlScenario{}, fmt.Errorf("chart of %s: %w", s.Name, err)
	}
	// chartSVG escapes every text it draws.
	hs := htmlScenario{ScenarioReport: s, ID: id, Chart: template.HTML(svg)}
	for _, c := range s.Contracts {
		switch c.Outcome {
		case contract.Pass:
			hs.Passed++
		case contract.Fail:
			hs.Failed++
		default:
			hs.Inconclusive++
		}
	}
	return hs, nil
}

// anchor is a section id for a scenario named name, unique among taken:
// "scenario-" and the name in lower case with every run of other
// characters than letters and digits made one dash.
func anchor(name string, taken map[string]bool) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	id := "scenario-" + b.String()
	if b.Len() == 0 {
		id = "scenario"
	}
	for i, base := 2, id; taken[id]; i++ {
		id = fmt.Sprintf("%s-%d", base, i)
	}
	taken[id] = true
	return id
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

// headline is what the report opens on: the figures a reader asks first.
type headline struct {
	Requests int
	// ErrorShare is the share of requests that ended as an error or a
	// timeout, over every scenario.
	ErrorShare string
	// P99 is the highest 99th percentile of any phase, and the phase.
	P99, P99Where                string
	Passed, Failed, Inconclusive int
}

func headlineOf(r *Report) headline {
	var h headline
	errs := 0
	var p99 time.Duration
	for _, s := range r.Scenarios {
		for _, p := range s.Phases {
			h.Requests += p.Requests
			errs += p.Classes[contract.Error] + p.Classes[contract.Timeout]
			if p.P99 > p99 {
				p99, h.P99Where = p.P99, s.Name+" / "+p.Name
			}
		}
		for _, c := range s.Contracts {
			switch c.Outcome {
			case contract.Pass:
				h.Passed++
			case contract.Fail:
				h.Failed++
			default:
				h.Inconclusive++
			}
		}
	}
	h.ErrorShare = "–"
	if h.Requests > 0 {
		h.ErrorShare = strconv.FormatFloat(100*float64(errs)/float64(h.Requests), 'f', 1, 64) + "%"
	}
	h.P99 = "–"
	if p99 > 0 {
		h.P99 = fmtMs(p99)
	}
	return h
}

// faultWords says what a fault did in words: "productQuery: error
// 'database is locked'", "productQuery: timeout on 50% of calls"; a proxy
// or process fault says it in its own words already.
func faultWords(f contract.FaultTiming) string {
	if label := (contract.FaultSpan{Point: f.Point, Term: f.Term}).Label(); label != f.Point {
		return label
	}
	name := f.Point
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	term := f.Term
	share := ""
	if i := strings.Index(term, "%"); i > 0 && i < 4 && strings.Trim(term[:i], "0123456789.") == "" {
		share, term = " on "+term[:i+1]+" of calls", term[i+1:]
	}
	i := strings.Index(term, "|")
	if i < 0 || !strings.HasSuffix(term, `")`) {
		if term == "" {
			return name
		}
		return name + ": " + term + share
	}
	what := term[i+1 : len(term)-2]
	if kind, value, ok := strings.Cut(what, ":"); ok {
		if kind == "error" {
			what = kind + " '" + value + "'"
		} else {
			what = kind + " " + value
		}
	}
	return name + ": " + what + share
}
