package contract

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// verified records a verification of every 2xx request of the fault
// phase, answered 404 unless set says otherwise, and verify_done.
func (s *shop) verified(set func(r *timeline.Request, vr *timeline.VerifyResult)) *shop {
	end := t0.Add(3 * time.Second)
	for i := range s.tl.Requests {
		r := &s.tl.Requests[i]
		if r.Status/100 != 2 || r.Phase != "fault" {
			continue
		}
		vr := &timeline.VerifyResult{Request: r.Seq, Rule: "gone", Target: "GET /links/" + fmt.Sprint(r.Seq), Status: 404, Expect: []string{"404", "410"}, Attempts: 1}
		set(r, vr)
		s.event(timeline.Event{Time: end, Kind: timeline.Verify, Verified: vr})
	}
	return s.event(timeline.Event{Time: end, Kind: timeline.VerifyDone})
}

// TestVerifyOutcomes judges verification requests: ok (an expected
// status, and the body when body_contains says), violated (a decisive
// answer that is not expected) or unknown (401, 403, 408, 425, 429, 5xx,
// no answer, a request that could not be made), and
// violated_verifications OP N only when both ends agree; zero verified,
// or no verification at all, is inconclusive with the reason.
func TestVerifyOutcomes(t *testing.T) {
	pick := func(seq uint64, set func(vr *timeline.VerifyResult)) *timeline.Timeline {
		return newShop(10, normal).verified(func(r *timeline.Request, vr *timeline.VerifyResult) {
			if seq == 0 || r.Seq%seq == 0 {
				set(vr)
			}
		}).tl
	}
	tests := []struct {
		name   string
		expect string
		tl     *timeline.Timeline
		want   Outcome
		counts VerifyCounts
		substr string
	}{
		{"every deleted link gone", "violated_verifications == 0", pick(1, func(vr *timeline.VerifyResult) {}), Pass,
			VerifyCounts{Verified: 100, OK: 100}, "0 violated, 0 unknown, 100 ok of 100 verified"},
		{"a 410 is expected too", "violated_verifications == 0", pick(10, func(vr *timeline.VerifyResult) { vr.Status = 410 }), Pass,
			VerifyCounts{Verified: 100, OK: 100}, "100 ok"},
		{"a deleted link still redirecting is violated", "violated_verifications == 0", pick(10, func(vr *timeline.VerifyResult) { vr.Status = 302 }), Fail,
			VerifyCounts{Verified: 100, OK: 90, Violated: 10}, "10 violated, 0 unknown, 90 ok"},
		{"a 503 after retries is unknown", "violated_verifications == 0", pick(10, func(vr *timeline.VerifyResult) { vr.Status, vr.Attempts, vr.Elapsed = 503, 6, 5*time.Second }), Inconclusive,
			VerifyCounts{Verified: 100, OK: 90, Unknown: 10, Causes: map[string]int{"answered 503": 10}},
			"10 of 100 verifications are unknown (answered 503: 10): no answer could tell whether the invariant holds, so violated_verifications is between 0 and 10"},
		{"a refusal for auth says what to add", "violated_verifications == 0", pick(10, func(vr *timeline.VerifyResult) { vr.Status = 401 }), Inconclusive,
			VerifyCounts{Verified: 100, OK: 90, Unknown: 10, Causes: map[string]int{"answered 401": 10}}, "needs headers"},
		{"429 is unknown", "violated_verifications == 0", pick(50, func(vr *timeline.VerifyResult) { vr.Status = 429 }), Inconclusive,
			VerifyCounts{Verified: 100, OK: 98, Unknown: 2, Causes: map[string]int{"answered 429": 2}}, "answered 429: 2"},
		{"no answer is unknown", "violated_verifications == 0", pick(50, func(vr *timeline.VerifyResult) { vr.Status, vr.Error = 0, "connection refused" }), Inconclusive,
			VerifyCounts{Verified: 100, OK: 98, Unknown: 2, Causes: map[string]int{"no answer": 2}}, "no answer: 2"},
		{"a request that could not be made is unknown", "violated_verifications == 0", pick(50, func(vr *timeline.VerifyResult) {
			vr.Status, vr.Attempts, vr.Error = 0, 0, "request: no {capture.code} was captured for this request"
		}), Inconclusive, VerifyCounts{Verified: 100, OK: 98, Unknown: 2, Causes: map[string]int{"could not be sent": 2}}, "could not be sent: 2"},
		{"violated beside unknown fails", "violated_verifications == 0", pick(10, func(vr *timeline.VerifyResult) {
			if vr.Request%20 == 0 {
				vr.Status = 503
			} else {
				vr.Status = 302
			}
		}), Fail, VerifyCounts{Verified: 100, OK: 90, Violated: 5, Unknown: 5, Causes: map[string]int{"answered 503": 5}}, "5 violated, 5 unknown"},
		{"an expected status without the body's text is violated", "violated_verifications == 0", pick(1, func(vr *timeline.VerifyResult) {
			vr.Status, vr.Expect, vr.BodyContains, vr.Body = 200, []string{"200"}, `"deleted":true`, `{"deleted":false}`
		}), Fail, VerifyCounts{Verified: 100, Violated: 100}, "100 violated"},
		{"requests not verified are unknown", "violated_verifications == 0", func() *timeline.Timeline {
			tl := pick(1, func(vr *timeline.VerifyResult) {})
			tl.Events[len(tl.Events)-1].Data = map[string]any{timeline.NotVerified: 3}
			return tl
		}(), Inconclusive, VerifyCounts{Verified: 103, OK: 100, Unknown: 3, Causes: map[string]int{"not verified": 3}}, "not verified: 3"},
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
			if ch.Verified == nil {
				t.Fatal("no verification counts")
			}
			got := *ch.Verified
			if got.Verified != tt.counts.Verified || got.OK != tt.counts.OK || got.Violated != tt.counts.Violated || got.Unknown != tt.counts.Unknown || len(got.Causes) != len(tt.counts.Causes) {
				t.Errorf("counts %+v, want %+v", got, tt.counts)
			}
			for k, n := range tt.counts.Causes {
				if got.Causes[k] != n {
					t.Errorf("cause %q: %d, want %d", k, got.Causes[k], n)
				}
			}
		})
	}

	for name, tl := range map[string]*timeline.Timeline{
		"no verification sent":          newShop(10, normal).tl,
		"a window no rule selects from": newShop(10, normal).event(timeline.Event{Time: t0.Add(3 * time.Second), Kind: timeline.VerifyDone}).tl,
	} {
		c, _ := Compile(Spec{Name: name, Expect: []string{"violated_verifications == 0"}})
		if v := c.Evaluate(tl); v.Outcome != Inconclusive || v.Checks[0].Reason == "" {
			t.Errorf("%s: %s (%q), want inconclusive with the reason", name, v.Outcome, v.Checks[0].Reason)
		}
	}
}
