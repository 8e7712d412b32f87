package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// in the fault phase, requests for which bad(i) holds get what broken
// gives them; everything else is the normal service.
func faultPhase(bad func(i int) bool, broken func(r *timeline.Request)) func(string, int, *timeline.Request) {
	return func(phase string, i int, r *timeline.Request) {
		normal(phase, i, r)
		if phase == "fault" && bad(i) {
			broken(r)
		}
	}
}

func inPhase(name string, bad func(i int) bool, broken func(r *timeline.Request)) func(string, int, *timeline.Request) {
	return func(phase string, i int, r *timeline.Request) {
		normal(phase, i, r)
		if phase == name && bad(i) {
			broken(r)
		}
	}
}

func every(n int) func(int) bool   { return func(i int) bool { return i%n == 0 } }
func below(n int) func(int) bool   { return func(i int) bool { return i < n } }
func all(int) bool                 { return true }
func slow503(r *timeline.Request)  { served(r, 503, "none", 300*time.Millisecond) }
func fast503(r *timeline.Request)  { served(r, 503, "none", time.Millisecond) }
func fromDB(r *timeline.Request)   { served(r, 200, "db", time.Millisecond) }
func fromSlow(r *timeline.Request) { served(r, 200, "cache", 300*time.Millisecond) }

// badAge gives a response an age header that states no age.
func badAge(v string) func(r *timeline.Request) {
	return func(r *timeline.Request) { r.Headers["X-Copy-Age"] = v }
}
func timedOut(r *timeline.Request) {
	r.Status, r.Latency, r.Headers, r.Body = 0, time.Second, nil, ""
	r.Error = "Get \"http://127.0.0.1:1/products/1\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
}

func TestEvaluateForms(t *testing.T) {
	ok := newShop(10, normal).tl
	tests := []struct {
		name   string
		spec   Spec
		tl     *timeline.Timeline
		want   Outcome
		substr string
	}{
		// Class shares.
		{"fallback share passes", Spec{Expect: []string{`fallback >= 99%`}}, ok, Pass, "100% (100/100)"},
		{"slow 503s are errors, not fallbacks", Spec{Expect: []string{`fallback >= 99%`}}, newShop(10, faultPhase(every(10), slow503)).tl, Fail, "90% (90/100)"},
		{"named fallback passes", Spec{Expect: []string{`fallback("cache") >= 99%`}}, ok, Pass, "100%"},
		{"named fallback fails on another source", Spec{Expect: []string{`fallback("cache") >= 99%`}},
			newShop(10, faultPhase(every(2), func(r *timeline.Request) { served(r, 200, "default", time.Millisecond) })).tl, Fail, "50% (50/100)"},
		{"fast 503s are rejected", Spec{Expect: []string{`rejected >= 99%`}}, newShop(10, faultPhase(all, fast503)).tl, Pass, "100%"},
		{"slow 503s are not rejected", Spec{Expect: []string{`rejected >= 99%`}}, newShop(10, faultPhase(all, slow503)).tl, Fail, "0% (0/100)"},
		{"timeouts under a bound pass", Spec{Expect: []string{`timeout <= 1%`}}, ok, Pass, "0%"},
		{"timeouts over a bound fail", Spec{Expect: []string{`timeout <= 1%`}}, newShop(10, faultPhase(every(10), timedOut)).tl, Fail, "10% (10/100)"},
		{"primary share in warmup", Spec{Phase: "warmup", Expect: []string{`primary == 100%`}}, ok, Pass, "100%"},
		{"primary share in the fault", Spec{Expect: []string{`primary >= 1%`}}, ok, Fail, "0%"},
		// Status shares.
		{"5xx share passes", Spec{Expect: []string{`status 5xx <= 1%`}}, ok, Pass, "0% (0/100)"},
		{"5xx share fails", Spec{Expect: []string{`status 5xx <= 1%`}}, newShop(10, faultPhase(every(10), fast503)).tl, Fail, "10% (10/100)"},
		{"one status passes", Spec{Expect: []string{`status 200 >= 99%`}}, ok, Pass, "100%"},
		{"one status fails", Spec{Expect: []string{`status 200 >= 99%`}}, newShop(10, faultPhase(every(10), fast503)).tl, Fail, "90%"},
		// Latency aggregates.
		{"p99 passes", Spec{Expect: []string{`p99 latency < 50ms`}}, ok, Pass, "2ms"},
		{"p99 fails on two slow requests", Spec{Expect: []string{`p99 latency < 50ms`}}, newShop(10, faultPhase(every(50), fromSlow)).tl, Fail, "300ms"},
		{"k6 style p50", Spec{Expect: []string{`p50 < 5ms`}}, newShop(10, faultPhase(every(50), fromSlow)).tl, Pass, "2ms"},
		{"p(99.9)", Spec{Expect: []string{`p(99.9) < 250ms`}}, newShop(10, faultPhase(every(50), fromSlow)).tl, Fail, "300ms"},
		{"p999", Spec{Expect: []string{`p999 latency < 250ms`}}, ok, Pass, "2ms"},
		{"max passes", Spec{Expect: []string{`max latency <= 2ms`}}, ok, Pass, "2ms"},
		{"avg fails", Spec{Expect: []string{`avg latency < 1ms`}}, ok, Fail, "2ms"},
		// Throughput.
		{"rps passes", Spec{Expect: []string{`rps >= 90`}}, ok, Pass, "100/s"},
		{"rps fails", Spec{Expect: []string{`rps >= 150`}}, ok, Fail, "100/s"},
		{"admitted rps under the limit", Spec{Expect: []string{`admitted rps <= 110`}}, ok, Pass, "100/s"},
		{"admitted rps over the limit", Spec{Expect: []string{`admitted rps <= 55`}}, ok, Fail, "100/s"},
		{"refusals are not admitted", Spec{Expect: []string{`admitted rps <= 55`}}, newShop(10, faultPhase(every(2), fast503)).tl, Pass, "50/s"},
		{"refusals count whatever their header says", Spec{Expect: []string{`admitted count <= 50`}}, newShop(10, faultPhase(every(2), func(r *timeline.Request) { served(r, 429, "cache", time.Millisecond) })).tl, Pass, "50"},
		{"no response: admitted or not unknown", Spec{Expect: []string{`admitted rps <= 55`}}, newShop(10, faultPhase(every(2), timedOut)).tl, Inconclusive, "50/s to 100/s"},
		{"no response within the bound either way", Spec{Expect: []string{`admitted rps <= 110`}}, newShop(10, faultPhase(every(2), timedOut)).tl, Pass, "50/s"},
		{"over the bound without the unknown ones", Spec{Expect: []string{`admitted rps <= 40`}}, newShop(10, faultPhase(every(2), timedOut)).tl, Fail, "50/s"},
		{"admitted floor", Spec{Expect: []string{`admitted rps >= 45`}}, newShop(10, faultPhase(every(2), timedOut)).tl, Pass, "50/s"},
		{"count passes", Spec{Expect: []string{`count >= 100`}}, ok, Pass, "100"},
		{"count fails", Spec{Expect: []string{`count > 100`}}, ok, Fail, "100"},
		// Quantified predicates over the new names.
		{"class and source", Spec{Expect: []string{`class == "fallback" && source == "cache" for >= 99%`}}, ok, Pass, "100%"},
		{"class and source fail", Spec{Expect: []string{`class == "fallback" && source == "cache" for >= 99%`}},
			newShop(10, faultPhase(every(10), fromDB)).tl, Fail, "90%"},
		{"json path", Spec{Expect: []string{`json("name") != nil && json("id") < 10 for >= 99%`}}, ok, Pass, "100%"},
		{"json path fails on empty bodies", Spec{Expect: []string{`json("name") != nil for >= 99%`}}, newShop(10, faultPhase(every(10), slow503)).tl, Fail, "90%"},
		{"age passes", Spec{Expect: []string{`age <= 2s for >= 99%`}}, ok, Pass, "100%"},
		{"age fails", Spec{Expect: []string{`age <= 1s for >= 99%`}}, ok, Fail, "0%"},
		{"faults on", Spec{Expect: []string{`"shop/store/productQuery" in faults for == 100%`}}, ok, Pass, "100%"},
		{"no faults in warmup", Spec{Phase: "warmup", Expect: []string{`len(faults) > 0 for >= 1%`}}, ok, Fail, "0%"},
		// since_fault: chaoskit's own clock of the fault, 10ms a request.
		{"copies as old as the fault", Spec{Expect: []string{`age >= since_fault for == 100%`}}, ok, Pass, "100% (100/100)"},
		{"a copy younger than the fault", Spec{Expect: []string{`age >= since_fault for == 100%`}}, newShop(10, faultPhase(every(2), badAge("0"))).tl, Fail, "51% (51/100)"},
		{"served past a time into the fault", Spec{Expect: []string{`status != 200 || since_fault <= 500ms for == 100%`}}, ok, Fail, "51% (51/100)"},
		{"since_fault with no fault on", Spec{Phase: "warmup", Expect: []string{`since_fault <= 1s for == 100%`}}, ok, Inconclusive, "no fault on"},
		// Stale copies.
		{"stale passes", Spec{Expect: []string{`stale <= 30s`}}, ok, Pass, "1.5s oldest of 100 copies"},
		{"stale fails", Spec{Expect: []string{`stale <= 1s`}}, ok, Fail, "1.5s oldest"},
		{"no copies, nothing stale", Spec{Phase: "warmup", Expect: []string{`stale <= 1s`}}, ok, Pass, "no copies served"},
		// Ages that are none: a violation of whatever reads age.
		{"a negative age is not fresh", Spec{Expect: []string{`stale <= 30s`}}, newShop(10, faultPhase(every(50), badAge("-5"))).tl, Fail, `unknown: 2 of 100 copies state no age (age header X-Copy-Age: "-5" is not`},
		{"an unparsable age is not fresh", Spec{Expect: []string{`stale <= 30s`}}, newShop(10, faultPhase(every(50), badAge("1.5s"))).tl, Fail, `"1.5s" is not`},
		{"an age on a primary answer counts too", Spec{Phase: "warmup", Expect: []string{`stale <= 30s`}}, newShop(10, inPhase("warmup", every(50), badAge("x"))).tl, Fail, "unknown: 2 of 2 copies"},
		{"a predicate on age is broken by a bad age", Spec{Expect: []string{`age >= 0s for == 100%`}}, newShop(10, faultPhase(every(50), badAge("-5"))).tl, Fail, "98% (98/100)"},
		{"a share may still hold with bad ages", Spec{Expect: []string{`age < 2s for >= 90%`}}, newShop(10, faultPhase(every(50), badAge("-5"))).tl, Pass, "98% (98/100)"},
		{"a predicate not on age ignores the age header", Spec{Expect: []string{`status == 200 for == 100%`}}, newShop(10, faultPhase(every(50), badAge("-5"))).tl, Pass, "100% (100/100)"},
		// Time to degrade and recover.
		{"degrades at once", Spec{Expect: []string{`time_to_degrade < 200ms`}}, ok, Pass, "0s"},
		{"degrades too late", Spec{Expect: []string{`time_to_degrade < 200ms`}}, newShop(10, faultPhase(below(30), slow503)).tl, Fail, "300ms"},
		{"degrades in time", Spec{Expect: []string{`time_to_degrade < 500ms`}}, newShop(10, faultPhase(below(30), slow503)).tl, Pass, "300ms"},
		{"never degrades", Spec{Expect: []string{`time_to_degrade < 1s`}}, newShop(10, faultPhase(all, slow503)).tl, Fail, "never"},
		{"one stray error does not delay", Spec{Expect: []string{`time_to_degrade < 100ms`}}, newShop(10, faultPhase(func(i int) bool { return i == 3 }, slow503)).tl, Pass, "0s"},
		{"rejections count when named", Spec{Expect: []string{`time_to_degrade("fallback", "rejected") < 100ms`}}, newShop(10, faultPhase(below(30), fast503)).tl, Pass, "0s"},
		{"rejections do not count by default", Spec{Expect: []string{`time_to_degrade < 100ms`}}, newShop(10, faultPhase(below(30), fast503)).tl, Fail, "300ms"},
		{"recovers at once", Spec{Phase: "recovery", Expect: []string{`time_to_recover < 500ms`}}, ok, Pass, "0s"},
		{"recovers too late", Spec{Phase: "recovery", Expect: []string{`time_to_recover < 500ms`}},
			newShop(10, inPhase("recovery", below(70), func(r *timeline.Request) { served(r, 200, "cache", time.Millisecond) })).tl, Fail, "700ms"},
		{"recovery judged from the fault phase too", Spec{Expect: []string{`time_to_recover < 500ms`}}, ok, Pass, "0s"},
		{"no fault to time from", Spec{Phase: "warmup", Expect: []string{`time_to_degrade < 1s`}}, ok, Inconclusive, "no data"},
		// Breaker transitions.
		{"breaker opens in time", Spec{Expect: []string{`breaker("db") opens within 1s`}}, newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, 2500*time.Millisecond)).tl, Pass, "open 300ms after fault start"},
		{"breaker opens late", Spec{Expect: []string{`breaker("db") opens within 200ms`}}, newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, 2500*time.Millisecond)).tl, Fail, "open 300ms after fault start"},
		{"breaker never opens", Spec{Expect: []string{`breaker("db") opens within 1s`}}, newShop(10, normal).breaker(breakerOpen(time.Hour, time.Hour)).tl, Fail, "never open"},
		{"breaker closes in time", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 1s after fault`}}, newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, 2500*time.Millisecond)).tl, Pass, "closed 500ms after fault end"},
		{"breaker closes late", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 300ms after fault`}}, newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, 2500*time.Millisecond)).tl, Fail, "closed 500ms"},
		// A close is a transition: a breaker that was never open has not closed.
		{"breaker never opened, never closed", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 1s after fault`}}, newShop(10, normal).breaker(breakerOpen(time.Hour, time.Hour)).tl, Fail, "never open, so never closed: closed at fault end and in all 11 samples after it"},
		{"breaker closed again before the fault's end", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 1s after fault`}}, newShop(10, normal).breaker(breakerOpen(1200*time.Millisecond, 1500*time.Millisecond)).tl, Fail, "never open, so never closed"},
		{"half-open at the fault's end, then closed", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 1s after fault`}}, newShop(10, normal).breaker(func(at time.Duration) string {
			if at >= 1500*time.Millisecond && at < 2300*time.Millisecond {
				return "half-open"
			}
			return "closed"
		}).tl, Pass, "closed 300ms after fault end"},
		{"breaker opens after the fault's end, then closes", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 1s after fault`}}, newShop(10, normal).breaker(breakerOpen(2200*time.Millisecond, 2600*time.Millisecond)).tl, Pass, "closed 600ms after fault end"},
		{"breaker open to the end", Spec{Phase: "recovery", Expect: []string{`breaker("db") closes within 1s after fault`}}, newShop(10, normal).breaker(breakerOpen(1300*time.Millisecond, time.Hour)).tl, Fail, "never closed in 11 samples after fault end"},
		{"no state samples", Spec{Expect: []string{`breaker("db") opens within 1s`}}, ok, Inconclusive, "no data"},
		{"unknown breaker", Spec{Expect: []string{`breaker("payments") opens within 1s`}}, newShop(10, normal).breaker(breakerOpen(0, 0)).tl, Inconclusive, "no data"},
		// Write integrity.
		{"every write read back", Spec{Phase: "fault", Expect: []string{`lost_writes == 0`}},
			newShop(10, normal).readBack(func(*timeline.Request) bool { return true }, func(*timeline.Request, *timeline.ReadBackResult) {}).tl, Pass, "0 lost, 0 unknown, 100 ok of 100 acknowledged"},
		{"missing writes", Spec{Expect: []string{`lost_writes == 0`}},
			newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(r *timeline.Request, rd *timeline.ReadBackResult) {
				if r.Seq%10 == 0 {
					rd.Status, rd.Body, rd.BodySize = 404, "no such order\n", 14
				}
			}).tl, Fail, "10 lost, 0 unknown, 90 ok of 100 acknowledged"},
		{"different writes", Spec{Expect: []string{`lost_writes == 0`}},
			newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(r *timeline.Request, rd *timeline.ReadBackResult) {
				if r.Seq == 150 {
					rd.Body = `{"id":0,"name":"other"}`
				}
			}).tl, Fail, "1 lost, 0 unknown, 99 ok of 100"},
		{"compare only some fields", Spec{Expect: []string{`lost_writes == 0`}},
			newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(r *timeline.Request, rd *timeline.ReadBackResult) {
				rd.Compare = []string{"id"}
				rd.Body = strings.Replace(rd.Body, `"name":"p`, `"name":"q`, 1)
			}).tl, Pass, "0 lost"},
		{"a bound on losses", Spec{Expect: []string{`lost_writes <= 10`}},
			newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(r *timeline.Request, rd *timeline.ReadBackResult) {
				if r.Seq%10 == 0 {
					rd.Status = 404
				}
			}).tl, Pass, "10 lost, 0 unknown, 90 ok of 100"},
		{"writes never read back", Spec{Expect: []string{`lost_writes == 0`}}, ok, Inconclusive, "no data"},
		{"no write in the window", Spec{Phase: "warmup", Expect: []string{`lost_writes == 0`}},
			newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(*timeline.Request, *timeline.ReadBackResult) {}).tl, Inconclusive, "no data"},
		// Windows.
		{"until stops before the breakage", Spec{Until: 500 * time.Millisecond, Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, faultPhase(func(i int) bool { return i >= 60 }, slow503)).tl, Pass, "100% (51/51)"},
		{"without until the breakage counts", Spec{Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, faultPhase(func(i int) bool { return i >= 60 }, slow503)).tl, Fail, "60% (60/100)"},
		{"last skips the broken start", Spec{Last: 300 * time.Millisecond, MinSamples: 10, Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, faultPhase(below(60), slow503)).tl, Pass, "100% (30/30)"},
		{"settle and until together", Spec{Settle: 200 * time.Millisecond, Until: 800 * time.Millisecond, Expect: []string{`count == 61`}}, ok, Pass, "61"},
		{"path filter", Spec{Requests: Filter{Path: "/products/[0-6]"}, Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, faultPhase(func(i int) bool { return (101+i)%10 >= 7 }, slow503)).tl, Pass, "100% (70/70)"},
		{"without the path filter", Spec{Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, faultPhase(func(i int) bool { return (101+i)%10 >= 7 }, slow503)).tl, Fail, "70% (70/100)"},
		{"method filter", Spec{Requests: Filter{Method: "get"}, MinSamples: 10, Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, faultPhase(every(2), func(r *timeline.Request) { r.Method, r.Target = "POST", "POST /orders"; slow503(r) })).tl, Pass, "100% (50/50)"},
		{"tag filter", Spec{Requests: Filter{Tag: "reads"}, MinSamples: 10, Expect: []string{`status == 200 for >= 99%`}},
			newShop(10, func(phase string, i int, r *timeline.Request) {
				normal(phase, i, r)
				if i%2 == 0 {
					r.Tags = []string{"reads"}
				} else if phase == "fault" {
					slow503(r)
				}
			}).tl, Pass, "100% (50/50)"},
		{"whole run", Spec{Phase: "", Expect: []string{`count == 300`, `status == 200 for >= 99%`}}, ok, Pass, "300"},
		{"whole run sees the fault", Spec{Phase: "", Expect: []string{`primary >= 99%`}}, ok, Fail, "66.67% (200/300)"},
		// Inconclusive verdicts.
		{"too few samples", Spec{MinSamples: 101, Expect: []string{`fallback >= 99%`}}, ok, Inconclusive, "100%"},
		{"unfired fault", Spec{Expect: []string{`fallback >= 99%`}}, newShop(0, normal).tl, Inconclusive, "100%"},
		{"filter leaves nothing", Spec{Requests: Filter{Path: "/nothing"}, Expect: []string{`p99 < 1s`}}, ok, Inconclusive, "no requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = tt.name
			if tt.spec.Phase == "" && !strings.HasPrefix(tt.name, "whole run") && !strings.Contains(tt.spec.Expect[0], "lost_writes") {
				tt.spec.Phase = "fault"
			}
			c, err := Compile(conv(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.tl)
			if v.Outcome != tt.want || !strings.Contains(v.Measured, tt.substr) {
				t.Errorf("verdict %s measured %q (reason %q); want %s with %q", v.Outcome, v.Measured, v.Reason, tt.want, tt.substr)
			}
		})
	}
}

func TestEvidence(t *testing.T) {
	judge := func(expect string, tl *timeline.Timeline) CheckResult {
		t.Helper()
		c, err := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{expect}}))
		if err != nil {
			t.Fatal(err)
		}
		return c.Evaluate(tl).Checks[0]
	}
	t.Run("share violations name class, source and fault", func(t *testing.T) {
		got := judge(`fallback >= 99%`, newShop(10, faultPhase(every(10), slow503)).tl).Violations
		if len(got) != MaxViolations {
			t.Fatalf("violations = %d", len(got))
		}
		v := got[0]
		if v.Class != Error || v.Source != "none" || v.Status != 503 || v.Offset != 0 || len(v.Faults) != 1 || v.Faults[0] != dbFault || v.Seq != 101 {
			t.Errorf("first violation = %+v", v)
		}
		if got[1].Offset != 100*time.Millisecond {
			t.Errorf("second violation at %v", got[1].Offset)
		}
	})
	t.Run("upper bounds blame the requests inside the set", func(t *testing.T) {
		got := judge(`status 5xx <= 1%`, newShop(10, faultPhase(every(10), fast503)).tl).Violations
		if len(got) == 0 || got[0].Status != 503 || got[0].Class != Rejected {
			t.Errorf("violations = %+v", got)
		}
	})
	t.Run("latency violations are the slow requests", func(t *testing.T) {
		got := judge(`p99 < 50ms`, newShop(10, faultPhase(every(50), fromSlow)).tl).Violations
		if len(got) != 2 || got[0].Latency != 300*time.Millisecond || got[1].Offset != 500*time.Millisecond {
			t.Errorf("violations = %+v", got)
		}
	})
	t.Run("a late degradation lists what came before", func(t *testing.T) {
		got := judge(`time_to_degrade < 200ms`, newShop(10, faultPhase(below(30), slow503)).tl).Violations
		if len(got) != MaxViolations || got[0].Class != Error {
			t.Errorf("violations = %+v", got)
		}
	})
	t.Run("lost writes are all listed with what was wrong", func(t *testing.T) {
		tl := newShop(10, normal).readBack(func(r *timeline.Request) bool { return r.Phase == "fault" }, func(r *timeline.Request, rd *timeline.ReadBackResult) {
			switch {
			case r.Seq%10 == 0:
				rd.Status = 404
			case r.Seq == 151:
				rd.Body = `{"id":1,"name":"changed"}`
			}
		}).tl
		got := judge(`lost_writes == 0`, tl).Violations
		if len(got) != 11 {
			t.Fatalf("lost writes listed = %d, want 11 (more than MaxViolations)", len(got))
		}
		if got[0].Seq != 110 || got[0].Detail != "missing: GET /orders/110 -> 404" {
			t.Errorf("first lost write = %+v", got[0])
		}
		if got[5].Seq != 151 || got[5].Detail != `different: GET /orders/151: name: acknowledged p1, read changed` {
			t.Errorf("changed write = %+v", got[5])
		}
	})
	t.Run("ages that are none name the header and its value", func(t *testing.T) {
		tl := newShop(10, faultPhase(every(50), badAge("-5"))).tl
		for _, expect := range []string{`stale <= 30s`, `age <= 30s for == 100%`} {
			got := judge(expect, tl).Violations
			if len(got) != 2 || got[0].Seq != 101 || got[0].Detail != `age header X-Copy-Age: "-5" is not a non-negative number of milliseconds` {
				t.Errorf("%s: violations = %+v", expect, got)
			}
		}
	})
	t.Run("stale copies name their age", func(t *testing.T) {
		got := judge(`stale <= 1s`, newShop(10, normal).tl).Violations
		if len(got) != MaxViolations || got[0].Detail != "served a copy 1.5s old" {
			t.Errorf("violations = %+v", got)
		}
	})
}

func TestFormErrors(t *testing.T) {
	tests := []struct {
		expect string
		col    int
		msg    string
	}{
		{`p99 latency < 150`, 15, `"150" is not a duration`},
		{`p0 < 1s`, 1, "not between 0 and 100"},
		{`rps >= fast`, 8, "not a number"},
		{`fallback >= 99`, 13, "not a share"},
		{`fallback("a", "b") >= 9%`, 1, "takes one source name"},
		{`status 5xx <= 101%`, 15, "above 100%"},
		{`stale >= 1s`, 7, "upper bound"},
		{`time_to_degrade("slow") < 1s`, 18, `unknown class "slow"`},
		{`time_to_recover > 1s`, 17, "upper bound"},
		{`breaker("db") opens within soon`, 28, "not a duration"},
		{`lost_writes == none`, 16, "not a number"},
		{`availability >= 99%`, 1, "no known form"},
	}
	for _, tt := range tests {
		_, err := Compile(conv(Spec{Name: "c", Expect: []string{tt.expect}}))
		var se *SyntaxError
		if !asSyntax(err, &se) || se.Column != tt.col || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("%q: err = %v (col %v); want col %d %q", tt.expect, err, colOf(se), tt.col, tt.msg)
		}
	}
}

func colOf(se *SyntaxError) any {
	if se == nil {
		return nil
	}
	return se.Column
}

func TestPercentileOf(t *testing.T) {
	if percentileOf("999") != 99.9 || percentileOf("50") != 50 || percentileOf("9999") != 99.99 {
		t.Error("percentileOf")
	}
}
