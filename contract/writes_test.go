package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestWriteFates judges acknowledged writes as Jepsen does: ok, lost (a
// read that succeeded shows the write missing or different) or unknown (no
// read could tell), and lost_writes OP N only when both ends of lost ..
// lost+unknown agree.
func TestWriteFates(t *testing.T) {
	// bad makes the read-back of the fault phase's writes whose Seq
	// satisfies pick into what set says.
	bad := func(pick func(seq uint64) bool, set func(rd *timeline.ReadBackResult)) *timeline.Timeline {
		return newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(r *timeline.Request, rd *timeline.ReadBackResult) {
			rd.Attempts = 1
			if pick(r.Seq) {
				set(rd)
			}
		}).tl
	}
	one := func(seq uint64) bool { return seq == 150 }
	some := func(seq uint64) bool { return seq%10 == 0 }
	unavailable := func(rd *timeline.ReadBackResult) {
		rd.Status, rd.Body, rd.BodySize, rd.Attempts, rd.Elapsed = 503, "busy", 4, 7, 10*time.Second
	}
	tests := []struct {
		name   string
		expect string
		tl     *timeline.Timeline
		want   Outcome
		counts WriteCounts
		substr string // in the measured figure or the reason
	}{
		{"every write there", "lost_writes == 0", bad(one, func(*timeline.ReadBackResult) {}), Pass,
			WriteCounts{Acknowledged: 100, OK: 100}, "0 lost, 0 unknown, 100 ok of 100 acknowledged"},
		{"one read still 503 after retries is unknown, not lost", "lost_writes == 0", bad(one, unavailable), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 99, Unknown: 1, Causes: map[string]int{"answered 503": 1}},
			"1 of 100 acknowledged writes are unknown (answered 503: 1): no read could tell whether they are there, so lost_writes is between 0 and 1"},
		{"a read refused for auth says what to add", "lost_writes == 0", bad(some, func(rd *timeline.ReadBackResult) { rd.Status, rd.Body = 401, "" }), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 90, Unknown: 10, Causes: map[string]int{"answered 401": 10}}, "needs read_headers"},
		{"no answer is unknown", "lost_writes == 0", bad(one, func(rd *timeline.ReadBackResult) { rd.Status, rd.Error = 0, "connection refused" }), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 99, Unknown: 1, Causes: map[string]int{"no answer": 1}}, "no answer: 1"},
		{"a read that cannot be made is unknown", "lost_writes == 0", bad(one, func(rd *timeline.ReadBackResult) {
			rd.Status, rd.Attempts, rd.Error = 0, 0, "the acknowledgement has no json.id"
		}), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 99, Unknown: 1, Causes: map[string]int{"could not be read": 1}}, "could not be read: 1"},
		{"a 200 that is not JSON is unknown", "lost_writes == 0", bad(one, func(rd *timeline.ReadBackResult) { rd.Body = "<html>sign in</html>" }), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 99, Unknown: 1, Causes: map[string]int{"read not JSON": 1}}, "read not JSON: 1"},
		{"a read too large to compare is unknown", "lost_writes == 0", bad(one, func(rd *timeline.ReadBackResult) { rd.Body, rd.BodySize = "", timeline.MaxBody+1 }), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 99, Unknown: 1, Causes: map[string]int{"read too large to compare": 1}}, "read too large"},
		{"404 is lost", "lost_writes == 0", bad(some, func(rd *timeline.ReadBackResult) { rd.Status = 404 }), Fail,
			WriteCounts{Acknowledged: 100, OK: 90, Lost: 10}, "10 lost, 0 unknown, 90 ok"},
		{"a listed missing status is lost", "lost_writes == 0", bad(one, func(rd *timeline.ReadBackResult) { rd.Status, rd.Missing = 400, []string{"400"} }), Fail,
			WriteCounts{Acknowledged: 100, OK: 99, Lost: 1}, "1 lost"},
		{"an unlisted 4xx is unknown", "lost_writes == 0", bad(one, func(rd *timeline.ReadBackResult) { rd.Status = 400 }), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 99, Unknown: 1, Causes: map[string]int{"answered 400": 1}}, "answered 400"},
		{"lost beside unknown fails", "lost_writes == 0", bad(some, func(rd *timeline.ReadBackResult) {
			if rd.Write == 110 {
				unavailable(rd)
			} else {
				rd.Status = 404
			}
		}), Fail, WriteCounts{Acknowledged: 100, OK: 90, Lost: 9, Unknown: 1, Causes: map[string]int{"answered 503": 1}}, "9 lost, 1 unknown, 90 ok"},
		{"a bound that holds even if every unknown is lost", "lost_writes <= 10", bad(func(seq uint64) bool { return seq%20 == 0 }, unavailable), Pass,
			WriteCounts{Acknowledged: 100, OK: 95, Unknown: 5, Causes: map[string]int{"answered 503": 5}}, "0 lost, 5 unknown"},
		{"a bound the unknowns could break", "lost_writes <= 5", bad(some, unavailable), Inconclusive,
			WriteCounts{Acknowledged: 100, OK: 90, Unknown: 10, Causes: map[string]int{"answered 503": 10}}, "between 0 and 10"},
		{"writes not read back are unknown", "lost_writes == 0", func() *timeline.Timeline {
			tl := bad(one, func(*timeline.ReadBackResult) {})
			tl.Events[len(tl.Events)-1].Data = map[string]any{timeline.NotReadBack: 3}
			return tl
		}(), Inconclusive, WriteCounts{Acknowledged: 103, OK: 100, Unknown: 3, Causes: map[string]int{"not read back": 3}}, "not read back: 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(Spec{Name: tt.name, Expect: []string{tt.expect}})
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			ch := v.Checks[0]
			if v.Outcome != tt.want || !strings.Contains(ch.Measured+" | "+ch.Reason, tt.substr) {
				t.Errorf("verdict %s measured %q reason %q; want %s with %q", v.Outcome, ch.Measured, ch.Reason, tt.want, tt.substr)
			}
			if ch.Writes == nil {
				t.Fatal("no write counts")
			}
			got := *ch.Writes
			if got.Acknowledged != tt.counts.Acknowledged || got.OK != tt.counts.OK || got.Lost != tt.counts.Lost || got.Unknown != tt.counts.Unknown || len(got.Causes) != len(tt.counts.Causes) {
				t.Errorf("counts %+v, want %+v", got, tt.counts)
			}
			for k, n := range tt.counts.Causes {
				if got.Causes[k] != n {
					t.Errorf("cause %q: %d, want %d", k, got.Causes[k], n)
				}
			}
			if tt.want == Inconclusive && v.Reason == "" {
				t.Error("an inconclusive verdict without a reason")
			}
		})
	}
}
