package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/fuzz"
)

// The matrix has a row per combination, run or not, with a cell per
// invariant; coverage cuts a long invariant name to its column.
func TestCampaignRenderings(t *testing.T) {
	ex := &fuzz.Exploration{Invariants: []string{"served", "no loss"}, Elapsed: 3 * time.Second, Runs: 2, Saved: 1,
		Baseline: &fuzz.Row{Label: "none", Outcome: &fuzz.Outcome{Verdicts: []contract.Verdict{{Outcome: contract.Pass}, {Outcome: contract.Pass}}}},
		Singles:  []*fuzz.Row{{Label: "db=error", Combo: fuzz.Combo{{}}, Outcome: &fuzz.Outcome{Verdicts: []contract.Verdict{{Outcome: contract.Fail}, {Outcome: contract.Inconclusive}}}, Mix: []string{"fallback:cache"}, Unfired: []string{"db"}}},
		Pairs:    []*fuzz.Row{{Label: "db+cache", CoveredBy: "db+x"}, {Label: "cache+x"}}}
	var b strings.Builder
	WriteMatrix(&b, ex)
	for _, want := range []string{"none      pass  pass  (no fault on)", "db=error  FAIL  inc   fallback:cache (never fired: db)", "db+cache  ~     ~     covered by db+x", "cache+x   ·     ·     not run: budget spent", "I2  no loss"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("matrix lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	WriteCoverage(&b, &fuzz.Coverage{Runs: 2, Invariants: []*fuzz.InvariantCoverage{{Name: strings.Repeat("x", 70), Pass: 1}}})
	if !strings.Contains(b.String(), strings.Repeat("x", 59)+"…") || strings.Contains(b.String(), strings.Repeat("x", 60)) {
		t.Errorf("coverage:\n%s", b.String())
	}
}
