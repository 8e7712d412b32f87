package harness

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/exitcode"
	"github.com/chaoskit/chaoskit/reports"
	"github.com/chaoskit/chaoskit/timeline"
)

// TestContractsCompileOnce follows a bundled scenario through what chaoskit
// run does with it (load, the runner's options, the judging and
// measuring of the recorded run) and through chaoskit report: each
// contract is compiled once, when its scenario loads.
func TestContractsCompileOnce(t *testing.T) {
	before := contract.Compilations()
	scs, err := Load([]string{filepath.Join("..", "scenarios", "db-timeout-serves-cache.yaml")}, false, LoadOptions(nil, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	sc := scs[0]
	if got := contract.Compilations() - before; got != int64(len(sc.Contracts)) {
		t.Fatalf("loading compiled %d contracts, the scenario has %d", got, len(sc.Contracts))
	}
	loaded := contract.Compilations()
	// What the runner takes from the scenario.
	if names, _ := sc.RecordedHeaders(); len(names) == 0 || sc.Classifier() == nil {
		t.Fatalf("recorded headers %v", names)
	}
	dir := filepath.Join(t.TempDir(), "run")
	saveRun(t, dir, "85", true)
	tl, err := timeline.ReadFile(filepath.Join(dir, timeline.FileName))
	if err != nil {
		t.Fatal(err)
	}
	rep := ScenarioReport(sc, tl, dir, nil)
	if len(rep.Contracts) != len(sc.Contracts) {
		t.Fatalf("%d verdicts for %d contracts", len(rep.Contracts), len(sc.Contracts))
	}
	if got := contract.Compilations() - loaded; got != 0 {
		t.Errorf("the run compiled contracts %d more times after loading", got)
	}

	// chaoskit report DIR loads the scenario the run saved (one
	// compilation of its one contract) and judges with it.
	before = contract.Compilations()
	if _, err := Rejudge(dir, RejudgeOptions{Formats: []reports.Format{reports.JSON}, Out: io.Discard}); err != nil && exitcode.Of(err) != exitcode.Fail {
		t.Fatal(err)
	}
	if got := contract.Compilations() - before; got != 1 {
		t.Errorf("chaoskit report compiled %d contracts, the saved scenario has 1", got)
	}
}
