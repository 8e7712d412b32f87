package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

func TestRoute(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"GET /products/7", "GET /products/{id}"},
		{"GET /products/7?fields=name", "GET /products/{id}"},
		{"GET /api/articles", "GET /api/articles"},
		{"DELETE /orders/o-12", "DELETE /orders/o-12"},
		{"GET /u/123e4567-e89b-12d3-a456-426614174000/avatar", "GET /u/{id}/avatar"},
		{"GET /blobs/0123456789abcdef0123", "GET /blobs/{id}"},
		{"GET /v2/items", "GET /v2/items"},
	} {
		method, _, _ := strings.Cut(tt.target, " ")
		if got := Route(&timeline.Request{Method: method, Target: tt.target}); got != tt.want {
			t.Errorf("Route(%s) = %s, want %s", tt.target, got, tt.want)
		}
	}
}

// hidden is a shop whose fault phase answers share of the requests 404
// (a database error hidden behind a client-error status), the rest from
// the database.
func hidden(share int) *shop {
	return newShop(50, func(phase string, i int, r *timeline.Request) {
		if phase == "fault" && i < share {
			served(r, 404, "", time.Millisecond)
			return
		}
		served(r, 200, "db", time.Millisecond)
	})
}

func TestStatusShifts(t *testing.T) {
	fs := StatusShifts(hidden(100).tl, convCls(Classification{}))
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.Kind != "status_shift" || f.Phase != "fault" || f.Route != "GET /products/{id}" || f.Status != "4xx" || f.Baseline != "warmup" ||
		f.Share != 100 || f.BaselineShare != 0 || f.Total != 100 || f.BaselineTotal != 100 || len(f.Faults) != 1 || f.Faults[0] != dbFault {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(f.Message, "GET /products/{id} answered 4xx to 100% (100/100) in fault with shop/store/productQuery on, against 0% (0/100) in warmup") {
		t.Errorf("message %q", f.Message)
	}
	// Below the threshold, or in a run with no fault-free phase, nothing.
	if fs := StatusShifts(hidden(9).tl, convCls(Classification{})); len(fs) != 0 {
		t.Errorf("a 9-point shift is a finding: %+v", fs)
	}
	if fs := StatusShifts(hidden(10).tl, convCls(Classification{})); len(fs) != 1 {
		t.Errorf("a 10-point shift is no finding: %+v", fs)
	}
	noBaseline := hidden(100)
	noBaseline.tl.Events = append([]timeline.Event{{Time: t0, Kind: timeline.FaultOn, Point: "other"}}, noBaseline.tl.Events...)
	if fs := StatusShifts(noBaseline.tl, convCls(Classification{})); len(fs) != 0 {
		t.Errorf("no baseline, yet findings: %+v", fs)
	}
	// A 4xx the classification calls something else is not hiding: a
	// rule that calls the 404s errors leaves no finding.
	asErrors := Classification{Rules: []Rule{{Class: Error, Status: []StatusRange{{404, 404}}}}}
	if fs := StatusShifts(hidden(100).tl, asErrors); len(fs) != 0 {
		t.Errorf("404s classified as errors make a finding: %+v", fs)
	}
	// The correct shop shifts nothing.
	if fs := StatusShifts(newShop(50, normal).tl, convCls(Classification{})); len(fs) != 0 {
		t.Errorf("the correct shop: %+v", fs)
	}
}

func TestStatusShiftCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		s      *shop
		phase  string
		expect string
		want   Outcome
		meas   string
	}{
		{"hidden 404s", hidden(100), "fault", `status_shift("4xx") <= 10%`, Fail, "+100 points: GET /products/{id} 4xx 100% (100/100), 0% in warmup"},
		{"a few 404s", hidden(5), "fault", `status_shift("4xx") <= 10%`, Pass, "+5 points: GET /products/{id} 4xx 5% (5/100), 0% in warmup"},
		{"exact code", hidden(100), "fault", `status_shift("404") < 50%`, Fail, "+100 points: GET /products/{id} 404 100% (100/100), 0% in warmup"},
		{"named baseline", hidden(100), "fault", `status_shift("4xx", "recovery") <= 10%`, Fail, "+100 points: GET /products/{id} 4xx 100% (100/100), 0% in recovery"},
		{"the baseline itself", hidden(100), "warmup", `status_shift("4xx") == 0%`, Pass, "+0 points: GET /products/{id} 4xx 0% (0/100), 0% in warmup"},
		{"unknown baseline", hidden(100), "fault", `status_shift("4xx", "nope") <= 10%`, Inconclusive, "no baseline"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(conv(Spec{Name: "shift", Phase: tt.phase, Expect: []string{tt.expect}}))
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tt.s.tl)
			ch := v.Checks[0]
			if ch.Outcome != tt.want || ch.Measured != tt.meas {
				t.Errorf("%s: %s %q, want %s %q (%s)", tt.expect, ch.Outcome, ch.Measured, tt.want, tt.meas, ch.Reason)
			}
			if tt.want == Fail && (len(ch.Violations) == 0 || ch.Violations[0].Status != 404) {
				t.Errorf("violations %+v", ch.Violations)
			}
		})
	}
	if _, err := Compile(conv(Spec{Name: "bad", Expect: []string{`status_shift("4x") <= 10%`}})); err == nil {
		t.Error(`status_shift("4x") compiled`)
	}
}

func TestHeaders(t *testing.T) {
	cls := Classification{SourceHeader: "x-served-by", BreakerHeader: "x-breaker", Rules: []Rule{{Class: Fallback, Header: map[string]string{"x-cache": "HIT"}}}}
	if got := strings.Join(cls.Headers(), ","); got != "X-Breaker,X-Served-By,X-Cache" {
		t.Errorf("classification headers %s", got)
	}
	if got := strings.Join((&Classification{SourceJSON: "meta.source", AgeHeader: "Age"}).Headers(), ","); got != "Age" {
		t.Errorf("json-sourced classification reads headers %s", got)
	}
	// The zero classification knows no service's headers: it reads none.
	if got := (&Classification{}).Headers(); len(got) != 0 {
		t.Errorf("the zero classification reads headers %v", got)
	}
	c, err := Compile(conv(Spec{Name: "h", Expect: []string{`header("x-trace") != "" && header("Retry-After") != "" for >= 99%`, `p99 latency < 1s`}}))
	if err != nil {
		t.Fatal(err)
	}
	if names, all := c.Headers(); strings.Join(names, ",") != "X-Trace,Retry-After" || all {
		t.Errorf("contract headers %v, all %v", names, all)
	}
	c, err = Compile(conv(Spec{Name: "h", Expect: []string{`header("X-" + phase) == "" for >= 99%`}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, all := c.Headers(); !all {
		t.Error("a computed header name does not ask for every header")
	}
}
