package reports

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

// TestOverrunInEveryFormat: a phase held 1.5s past its planned 4s shows
// with its figure in the table, report.json, Markdown, JUnit and HTML,
// and the contracts on it say so.
func TestOverrunInEveryFormat(t *testing.T) {
	tl := shopTimeline()
	for i, e := range tl.Events {
		if e.Kind == timeline.PhaseEnd && e.Phase == "db-timeout" {
			tl.Events[i].Time = e.Time.Add(1500 * time.Millisecond)
		}
	}
	s := ScenarioReport{Name: tl.Meta.Scenario, File: "s.yaml"}
	for _, spec := range fixtureSpecs {
		spec.Classify = demoCls
		c, err := contract.Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		s.Contracts = append(s.Contracts, c.Evaluate(tl))
	}
	measureInto(&s, tl)
	s.Verdict = contract.Overall(s.Contracts, nil)
	r := New(t0, []ScenarioReport{s})

	figure := `phase "db-timeout" ran 5.5s of a planned 4s (1.5s over)`
	write := map[string]func(io.Writer, *Report) error{
		"table":    func(w io.Writer, r *Report) error { return WriteTable(w, r, TableOptions{Width: 1000}) },
		"json":     WriteJSON,
		"markdown": WriteMarkdown,
		"junit":    WriteJUnit,
		"html":     WriteHTML,
	}
	wants := map[string][]string{
		"table":    {"db-timeout-serves-cache: finding: " + figure, "db-timeout-serves-cache / on DB timeout return cached data: note: " + figure},
		"json":     {`"overrun_ns": 1500000000`, `"planned_ns": 4000000000`, `"kind": "phase_overrun"`, `"notes": [`},
		"markdown": {"finding: " + figure, "note: " + figure},
		"junit":    {"ran 5.5s of a planned 4s (1.5s over)"},
		"html":     {"(planned 4.00s, 1.50s over)", "Note: " + strings.ReplaceAll(figure, `"`, "&#34;")},
	}
	for name, f := range write {
		var buf bytes.Buffer
		if err := f(&buf, r); err != nil {
			t.Fatal(err)
		}
		for _, want := range wants[name] {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
}
