package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestFixtureBill checks the bill of the fixture's DB timeout, known from
// how shopTimeline was made: 400 requests sent while it was on, the first
// 30 answered 503 (failed), the other 370 from the cache with an age
// (degraded and stale); the cache answered for a second after the fault
// ended, so the primary class held again 1 s after it; the breaker was
// sampled open from 3.3 s to 8 s.
func TestFixtureBill(t *testing.T) {
	r := fixtureReport(t)
	s := r.Scenarios[0]
	if len(s.Bills) != 1 {
		t.Fatalf("%d bills, want 1", len(s.Bills))
	}
	b := s.Bills[0]
	if b.Fault != fixtureFault || b.Phase != "db-timeout" || b.Requests != 400 || b.Failed != 30 || b.Degraded != 370 || b.Stale != 370 || b.Refused != 0 {
		t.Errorf("bill %+v, want 400 requests: 30 failed, 370 degraded and stale", b)
	}
	if b.P99Added == nil || *b.P99Added < 90*time.Millisecond || *b.P99Added > 110*time.Millisecond {
		t.Errorf("p99 added %v, want about 100ms (the 503s took 100 ms; warmup's p99 is about 2 ms)", b.P99Added)
	}
	if b.Recovered == nil || b.Never || *b.Recovered != time.Second {
		t.Errorf("recovered %v (never %v), want 1s (the cache answered until 8 s)", b.Recovered, b.Never)
	}
	if b.DegradedIn == nil || *b.DegradedIn != 300*time.Millisecond || b.DegradeUnknown != "" {
		t.Errorf("degraded in %v (%s), want 300ms (the first 300 ms answered 503)", b.DegradedIn, b.DegradeUnknown)
	}
	// One rule: the bill's times are what time_to_degrade and
	// time_to_recover measure.
	timed := 0
	for _, v := range s.Contracts {
		for _, c := range v.Checks {
			var got *time.Duration
			switch {
			case strings.HasPrefix(c.Expect, "time_to_degrade"):
				got = b.DegradedIn
			case strings.HasPrefix(c.Expect, "time_to_recover"):
				got = b.Recovered
			default:
				continue
			}
			timed++
			if got == nil || c.Measured != got.String() {
				t.Errorf("%s measured %s, the bill says %v", c.Expect, c.Measured, got)
			}
		}
	}
	if timed != 2 {
		t.Errorf("%d time checks in the fixture's contracts, want time_to_degrade and time_to_recover", timed)
	}
	if b.Writes != nil {
		t.Errorf("writes %+v in a run that read none back", b.Writes)
	}
	open := map[string]time.Duration{}
	trans := map[string]int{}
	for _, p := range s.Phases {
		for _, br := range p.Breakers {
			open[p.Name] += br.Open
			trans[p.Name] += br.Transitions
		}
	}
	if open["warmup"] != 0 || open["db-timeout"] != 3700*time.Millisecond || open["recovery"] != time.Second {
		t.Errorf("breaker open %v, want warmup 0, db-timeout 3.7s, recovery 1s", open)
	}
	if trans["db-timeout"] != 1 || trans["recovery"] != 2 {
		t.Errorf("breaker transitions %v, want db-timeout 1, recovery 2", trans)
	}

	var md, tbl, html, js bytes.Buffer
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(&tbl, r, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"markdown": {"### Bill per fault", "| 400 | 30 (7.5%) | 370 (92.5%) | 370 (92.5%) | 0 (–) | +"},
		"table":    {"bill of " + fixtureFault + " in db-timeout: 30 of 400 requests failed, 370 degraded, 370 stale, 0 refused; p99 +", "degraded in 300ms; recovered in 1s"},
		"html":     {"<h3>Bill per fault</h3>", "<td class=\"num\">30 (7.5%)</td>"},
	} {
		got := map[string]string{"markdown": md.String(), "table": tbl.String(), "html": html.String()}[name]
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s lacks %q", name, w)
			}
		}
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Scenarios[0].Bills; len(got) != 1 || got[0].Failed != 30 || got[0].Recovered == nil || *got[0].Recovered != time.Second || got[0].DegradedIn == nil || *got[0].DegradedIn != 300*time.Millisecond {
		t.Errorf("report.json bills %+v", got)
	}
}

// TestCheckFigures checks that the judge gives each check's figure as a
// number with its unit and worse side, as builds are compared on it.
func TestCheckFigures(t *testing.T) {
	r := fixtureReport(t)
	got := map[string]string{}
	for _, c := range r.Scenarios[0].Contracts {
		for _, ch := range c.Checks {
			if ch.Value != nil {
				got[ch.Expect] = fmt.Sprintf("%.3g %s %s", *ch.Value, ch.Unit, ch.Worse)
			} else {
				got[ch.Expect] = "none"
			}
		}
	}
	for expect, want := range map[string]string{
		`p99 latency < 150ms`:      "0.00", // seconds: a few ms
		`fallback("cache") >= 99%`: "100 % lower",
		`status == 200 for >= 99%`: "100 % lower",
		`time_to_recover < 6s`:     " s higher",
		`stale <= 30s`:             " s higher",
	} {
		if !strings.Contains(got[expect], want) {
			t.Errorf("%s: figure %q, want it to hold %q", expect, got[expect], want)
		}
	}
	if g := got[`p99 latency < 150ms`]; !strings.HasSuffix(g, " s higher") {
		t.Errorf("p99: %q, want seconds, higher worse", g)
	}
}
