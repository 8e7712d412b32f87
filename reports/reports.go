// Package reports renders the verdicts of a chaoskit invocation: a terminal
// table, report.json, JUnit XML, Markdown and a self-contained HTML page
// with a timeline chart per scenario. It renders and nothing else: the
// verdicts and figures it shows come from package contract.
package reports

import (
	"encoding/json"
	"io"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/outdir"
)

// SchemaVersion is the version of the report.json schema (see
// docs/report-schema.md). Version 2 added evidence, per-phase metrics and
// fault timings; every version 1 field kept its meaning.
const SchemaVersion = 2

// Report is the summary of one invocation: every scenario it ran.
type Report struct {
	SchemaVersion int              `json:"schema_version"`
	Verdict       contract.Outcome `json:"verdict"`
	Started       time.Time        `json:"started"`
	Duration      time.Duration    `json:"duration_ns"`
	// Interrupted, when set, says what stopped the invocation before its
	// end (Ctrl-C, SIGTERM): its verdict is then never a pass.
	Interrupted string           `json:"interrupted,omitempty"`
	Scenarios   []ScenarioReport `json:"scenarios"`
}

// ScenarioReport is one scenario's outcome.
type ScenarioReport struct {
	Name    string           `json:"name"`
	File    string           `json:"file"`
	Verdict contract.Outcome `json:"verdict"`
	// RunDir is the scenario's run directory, relative to the report
	// directory when it lies below it, else absolute.
	RunDir string `json:"run_dir,omitempty"`
	// Error is set when the scenario could not be judged (the run failed).
	Error     string             `json:"error,omitempty"`
	Contracts []contract.Verdict `json:"contracts"`
	// Start is when the first phase started; Phases and Faults are offsets
	// from it.
	Start  time.Time               `json:"start,omitzero"`
	Phases []contract.PhaseMetrics `json:"phases,omitempty"`
	Faults []contract.FaultTiming  `json:"faults,omitempty"`
	// Findings are what the run showed that no contract asked about: a
	// status class that shifted under a fault (contract.StatusShifts).
	Findings []contract.Finding `json:"findings,omitempty"`
	// Bills are what each fault cost the users (contract.Bill).
	Bills []contract.Bill `json:"bills,omitempty"`
	// Series feeds the HTML chart (NewSeries); report.json leaves it out.
	Series *Series `json:"-"`
}

// AddMeasurement adds a run's figures to the scenario report.
func (s *ScenarioReport) AddMeasurement(m contract.Measurement) {
	s.Start, s.Phases, s.Faults, s.Findings, s.Bills = m.Start, m.Phases, m.Faults, m.Findings, m.Bills
}

// New folds scenario reports into a Report.
func New(started time.Time, scs []ScenarioReport) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Started: started, Duration: time.Since(started), Scenarios: scs}
	outcomes := make([]contract.Outcome, len(scs))
	for i, s := range scs {
		outcomes[i] = s.Verdict
	}
	r.Verdict = contract.Fold(outcomes...)
	return r
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeFile writes dir/name whole or not at all: synced to disk before it
// replaces the old file, no temporary file left behind on an error (see
// outdir.WriteFile).
func writeFile(dir, name string, r *Report, write func(io.Writer, *Report) error) (string, error) {
	path := filepath.Join(dir, name)
	if err := outdir.WriteFile(path, func(w io.Writer) error { return write(w, r) }); err != nil {
		return "", err
	}
	return path, nil
}
