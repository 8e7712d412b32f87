package contract

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// promqlAnswer records the server's answer to query: each series is its
// labels and its value at every step from the run's start (step 250ms,
// from -250ms).
func (s *shop) promqlAnswer(query string, series ...promqlSeries) *shop {
	var list []any
	for _, sr := range series {
		var values []any
		for i, v := range sr.values {
			if v == "" {
				continue // no sample at that step
			}
			at := t0.Add(time.Duration(i-1) * 250 * time.Millisecond)
			values = append(values, []any{float64(at.UnixMilli()) / 1000, v})
		}
		list = append(list, map[string]any{"labels": sr.labels, "values": values})
	}
	return s.event(timeline.Event{Time: t0.Add(3 * time.Second), Kind: timeline.PromQL, Message: query,
		Data: map[string]any{"server": "http://127.0.0.1:9090", "step_ns": float64(250 * time.Millisecond), "series": list}})
}

type promqlSeries struct {
	labels map[string]any
	values []string
}

// steps gives the values of a series at the 14 steps from -250ms to 3s:
// the warmup's up to +1s (steps 0-5), the fault's up to +2s (6-9), the
// recovery's after (10-13). A point is the last value scraped at or
// before its time, so the one at a phase's end is that phase's.
func steps(warmup, fault, recovery string) []string {
	out := []string{warmup, warmup}
	for _, v := range []string{warmup, fault, recovery} {
		out = append(out, v, v, v, v)
	}
	return out
}

// A promql form takes the server's points inside its window, as the metric
// forms take scrapes: a gauge's max, min, avg and last, a counter's
// increase and rate from the point at or before the window's start.
func TestPromQLForms(t *testing.T) {
	counts := []string{"0"}
	for i := 1; i < 14; i++ {
		counts = append(counts, []string{"0", "0", "10", "20", "30", "40", "40", "70", "100", "100", "100", "100", "100", "100"}[i])
	}
	s := newShop(10, normal).
		promqlAnswer(`sum(rate(app_errors_total[1s]))`, promqlSeries{map[string]any{}, steps("0.1", "4", "0.2")}).
		promqlAnswer(`sum(app_errors_total)`, promqlSeries{map[string]any{}, counts})
	for _, tt := range []struct {
		expect   string
		want     Outcome
		measured string
	}{
		{"max(promql(`sum(rate(app_errors_total[1s]))`)) <= 0.5", Fail, "4 at +250ms (4 samples)"},
		{`max(promql("sum(rate(app_errors_total[1s]))")) >= 4`, Pass, "4 at +250ms"},
		{`min(promql('sum(rate(app_errors_total[1s]))')) == 4`, Pass, "4 at +250ms"},
		{"last(promql(`sum(rate(app_errors_total[1s]))`)) == 4", Pass, "4 at +1s"},
		{"avg(promql(`sum(rate(app_errors_total[1s]))`)) == 4", Pass, "4 over 4 samples"},
		// From 40 at the fault's start (+0, step 5) to 100 at its end.
		{"increase(promql(`sum(app_errors_total)`)) == 60", Pass, "60 over 1s (5 samples, 100 requests)"},
		{"rate(promql(`sum(app_errors_total)`)) <= rps", Pass, "60/s"},
		{"increase(promql(`sum(app_errors_total)`)) <= 0.5 * baseline(\"warmup\")", Fail, "(warmup: 40"},
	} {
		c, err := Compile(Spec{Name: "c", Phase: "fault", Expect: []string{tt.expect}})
		if err != nil {
			t.Fatalf("%s: %v", tt.expect, err)
		}
		got := c.Evaluate(s.tl).Checks[0]
		if got.Outcome != tt.want || !strings.Contains(got.Measured, tt.measured) {
			t.Errorf("%s: %s, measured %q (%s); want %s, measured with %q", tt.expect, got.Outcome, got.Measured, got.Reason, tt.want, tt.measured)
		}
	}
}

// What a promql form cannot read makes it inconclusive, with the reason:
// no answer recorded, the server's error, an empty result, several series
// where one is needed, a gap in the points.
func TestPromQLMissing(t *testing.T) {
	two := []promqlSeries{{map[string]any{"code": "500"}, steps("1", "2", "3")}, {map[string]any{"code": "503"}, steps("1", "2", "3")}}
	gap := steps("1", "2", "3")
	gap[6], gap[7], gap[8] = "", "", ""
	for _, tt := range []struct {
		name   string
		tl     *timeline.Timeline
		reason string
	}{
		{"no answer recorded", newShop(10, normal).tl, "no answer of the Prometheus server to promql(`errors`) is recorded"},
		{"the server's error", newShop(10, normal).event(timeline.Event{Kind: timeline.PromQL, Message: "errors", Data: map[string]any{"error": "dial tcp 127.0.0.1:9: connection refused"}}).tl,
			"the Prometheus server could not evaluate promql(`errors`): dial tcp 127.0.0.1:9: connection refused"},
		{"empty result", newShop(10, normal).promqlAnswer("errors").tl, "promql(`errors`) gave no sample in the window (an empty result"},
		{"empty in the window", newShop(10, normal).promqlAnswer("errors", promqlSeries{map[string]any{}, steps("1", "", "")}).tl, "no point with promql(`errors`) in the window"},
		{"empty in the window, nothing before", newShop(10, normal).promqlAnswer("errors", promqlSeries{map[string]any{}, steps("", "", "1")}).tl, "gave no sample in the window"},
		{"several series", newShop(10, normal).promqlAnswer("errors", two...).tl, `promql(` + "`errors`" + `) gave 2 series at +0s (code="500", code="503",), want one: aggregate it`},
		{"a gap in the points", newShop(10, normal).promqlAnswer("errors", promqlSeries{map[string]any{}, gap}).tl, "the points with promql(`errors`) leave a gap of 1s (from +0s)"},
	} {
		c, err := Compile(Spec{Name: "c", Phase: "fault", Expect: []string{"max(promql(`errors`)) <= 5"}})
		if err != nil {
			t.Fatal(err)
		}
		got := c.Evaluate(tt.tl).Checks[0]
		if got.Outcome != Inconclusive || !strings.Contains(got.Reason, tt.reason) {
			t.Errorf("%s: %s (%s), want inconclusive saying %q", tt.name, got.Outcome, got.Reason, tt.reason)
		}
	}
}

func TestPromQLSyntax(t *testing.T) {
	if q, ok := PromQLQuery("max( promql(`sum(x{a=\"b\"})`) ) <= 1"); !ok || q != `sum(x{a="b"})` {
		t.Errorf("PromQLQuery = %q, %v", q, ok)
	}
	if q, ok := PromQLQuery(`last(promql('sum(x{a="b"})')) <= 1`); !ok || q != `sum(x{a="b"})` {
		t.Errorf("single quotes: PromQLQuery = %q, %v", q, ok)
	}
	if _, ok := PromQLQuery("max(x) <= 1"); ok {
		t.Error("a local metric form read as promql")
	}
	for _, tt := range []struct{ expect, want string }{
		{"promql(`up`) <= 1", "1: promql(...) must be read through increase, rate, max, min, avg or last"},
		{"p99(promql(`up`)) <= 1", "5: promql(...) must be read through"},
		{"max(promql(``)) <= 1", "12: promql(...) has an empty query"},
		{"max(promql(`up`)) <= lots", "22: bad bound"},
	} {
		_, err := Compile(Spec{Name: "c", Expect: []string{tt.expect}})
		var se *SyntaxError
		col, msg, _ := strings.Cut(tt.want, ": ")
		if !errors.As(err, &se) || fmt.Sprint(se.Column) != col || !strings.Contains(se.Msg, msg) {
			t.Errorf("%s: %v, want column %s: %q", tt.expect, err, col, msg)
		}
	}
}
