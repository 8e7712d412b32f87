package initwrite

// Every call init makes into the engine (loading, running and judging
// scenarios, reading run directories) is in this file.

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/harness"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/timeline"
)

// runFile runs the scenario file into reportDir and returns its run
// directory. It has no contracts: what it prints is init's (its figures),
// not the run's table, whose verdict would only say so.
func runFile(ctx context.Context, path, reportDir string) (string, error) {
	scs, err := harness.Load([]string{path}, false, harness.LoadOptions(nil, 1, nil))
	if err != nil {
		return "", err
	}
	_, err = harness.Run(ctx, scs, harness.Options{ReportDir: reportDir, Out: io.Discard, Formats: []reports.Format{"table"}})
	if err != nil && !errors.Is(err, harness.ErrContractsFailed) {
		return "", err
	}
	return filepath.Join(reportDir, scs[0].Name), nil
}

// request is what init reads of one recorded request.
type request struct {
	phase   string
	tags    []string
	status  int
	latency time.Duration
	body    string
}

// eachRequest reads a run directory's requests.
func eachRequest(runDir string, fn func(request)) error {
	st, err := timeline.OpenDir(runDir)
	if err != nil {
		return err
	}
	return st.EachRequest(func(r *timeline.Request) error {
		fn(request{phase: r.Phase, tags: r.Tags, status: r.Status, latency: r.Latency, body: r.Body})
		return nil
	})
}

// judgement is one contract's verdict as init reports it.
type judgement struct {
	outcome, measured, expected, reason string
}

// judge judges the contracts of a scenario (its text, as if at path) on
// a run directory, with the judge every command uses.
func judge(path string, yaml []byte, runDir string) (map[string]judgement, error) {
	opts := harness.LoadOptions(nil, 1, nil)
	opts.SkipBodyFiles = true
	sc, err := plan.Parse(path, yaml, opts)
	if err != nil {
		return nil, err
	}
	st, err := timeline.OpenDir(runDir)
	if err != nil {
		return nil, err
	}
	out := map[string]judgement{}
	rep := harness.ScenarioReport(sc, st, runDir, nil)
	for _, v := range rep.Contracts {
		out[v.Name] = judgement{outcome: string(v.Outcome), measured: v.Measured, expected: v.Expected, reason: v.Reason}
	}
	return out, nil
}

// validate loads a scenario file as `chaoskit run` would.
func validate(path string) error {
	_, err := harness.Load([]string{path}, false, harness.LoadOptions(nil, 1, nil))
	return err
}
