package contract

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/internal/fuzzseed"
)

// FuzzExpect feeds the expectation parser any text: it compiles, or fails
// with a syntax error at a column of the text, and what compiles judges a
// recorded run without panicking. The body is shared with go-fuzz
// (gofuzz.go); testdata/fuzz/corpus holds one expectation per line of
// its files, the seeds of both.
func FuzzExpect(f *testing.F) {
	fuzzseed.Add(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkExpect(data) })
}

// TestFuzzTimelineJudgesEveryForm makes sure the run the fuzz target
// judges is rich enough: each kind of expectation reaches a verdict.
func TestFuzzTimelineJudgesEveryForm(t *testing.T) {
	for _, src := range []string{
		`status == 200 for >= 70%`, `fallback("cache") >= 50%`, `p99 latency < 50ms`, `time_to_degrade < 1s`,
		`breaker("db") opens within 1s`, `increase("db.product_queries") <= 2 * count`, `lost_writes == 0`,
		`body == baseline("warmup") for >= 70%`, `stale <= 2s`, `rps >= 5`,
	} {
		c, err := Compile(conv(Spec{Name: "t", Phase: "fault", Expect: []string{src}, MinSamples: 1}))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if v := c.Evaluate(fuzzTimeline()); v.Outcome == Inconclusive {
			t.Errorf("%s: inconclusive: %s %s", src, v.Reason, v.Checks[0].Reason)
		}
		if checkExpect([]byte(src)) != 1 {
			t.Errorf("%s: not counted as compiling", src)
		}
	}
	if checkExpect([]byte("status == for >= 1%")) != 0 || !strings.Contains(fuzzTimeline().Requests[0].Body, "price_cents") {
		t.Error("a bad expectation counted as compiling")
	}
}
