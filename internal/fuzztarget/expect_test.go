package fuzztarget

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/contract"
)

// TestTimelineJudgesEveryForm makes sure the run Expect judges is rich
// enough: each kind of expectation reaches a verdict.
func TestTimelineJudgesEveryForm(t *testing.T) {
	for _, src := range []string{
		`status == 200 for >= 70%`, `fallback("cache") >= 50%`, `p99 latency < 50ms`, `time_to_degrade < 1s`,
		`breaker("db") opens within 1s`, `increase("db.product_queries") <= 2 * count`, `lost_writes == 0`,
		`body == baseline("warmup") for >= 70%`, `stale <= 2s`, `rps >= 5`,
	} {
		c, err := contract.Compile(contract.Spec{Name: "t", Phase: "fault", Expect: []string{src}, MinSamples: 1,
			Classify: contract.Classification{SourceHeader: "Source", AgeHeader: "Age"}})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if v := c.Evaluate(judgedRun()); v.Outcome == contract.Inconclusive {
			t.Errorf("%s: inconclusive: %s %s", src, v.Reason, v.Checks[0].Reason)
		}
		if Expect([]byte(src)) != 1 {
			t.Errorf("%s: not counted as compiling", src)
		}
	}
	if Expect([]byte("status == for >= 1%")) != 0 || !strings.Contains(judgedRun().Requests[0].Body, "price_cents") {
		t.Error("a bad expectation counted as compiling")
	}
}
