// Package diff compares the judged runs of two builds of a service under
// the same scenario: a base (the main branch) and a head (a pull request).
// Each side ran the scenario several times; every figure the judge knows
// (per contract, per phase, per fault) is compared across the repetitions,
// with a noise band measured from them, and gets a word: regressed,
// improved, same, new, gone, or unknown when a side could not tell.
//
// It compares and renders; it runs nothing and judges nothing: the runs
// it is given were judged by the one judge (contract.JudgeWith, through
// plan.Scenario.Judge). docs/diff.md says how figures are compared and why.
package diff

import (
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/reports"
)

// Run is one judged run of one side: what the judge gave for one run
// directory of one scenario.
type Run struct {
	// Scenario names the scenario; runs of one scenario are compared with
	// each other only.
	Scenario string `json:"scenario"`
	// Dir is the run directory, to name in the reports; may be empty.
	Dir      string             `json:"dir,omitempty"`
	Verdicts []contract.Verdict `json:"verdicts"`
	// Measurement is the run's figures; nil when the run was not measured
	// (it recorded nothing), and then every figure of it is unknown.
	Measurement *contract.Measurement `json:"measurement,omitempty"`
	// Err is the error the run ended with, if any.
	Err string `json:"error,omitempty"`
}

// FromJudged makes a Run of what the judge returned for one run of the
// named scenario (plan.Scenario.Judge: verdicts, measurement) and the
// error the run ended with, if any.
func FromJudged(scenario, dir string, verdicts []contract.Verdict, m *contract.Measurement, runErr error) Run {
	r := Run{Scenario: scenario, Dir: dir, Verdicts: verdicts, Measurement: m}
	if runErr != nil {
		r.Err = runErr.Error()
	}
	return r
}

// FromReport makes a Run of a scenario's report, as harness.ScenarioReport
// makes it after judging a run directory.
func FromReport(s reports.ScenarioReport) Run {
	r := Run{Scenario: s.Name, Dir: s.RunDir, Verdicts: s.Contracts, Err: s.Error}
	if !s.Start.IsZero() || len(s.Phases) > 0 {
		r.Measurement = &contract.Measurement{Start: s.Start, Phases: s.Phases, Faults: s.Faults, Findings: s.Findings, Bills: s.Bills}
	}
	return r
}

// ms is a duration in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
