package contract

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// promSeries is one series of a hand-made metric sample.
func promSeries(labels map[string]any, v any) any {
	return map[string]any{"labels": labels, "value": v}
}

// metricTimeline is a 2 s "fault" phase of 100 requests with a metric
// sample every 100 ms, as the runner records them: a counter of queries
// growing by perSample each sample (restarting from zero at sample 10 if
// reset), the breaker "db" open from openAt (never, if negative), and a
// latency histogram whose observations in the window all fall in the
// (0.1, 0.25] bucket.
func metricTimeline(perSample float64, openAt time.Duration, reset bool) *timeline.Timeline {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "s", Start: t0}}
	tl.Events = append(tl.Events, timeline.Event{Time: t0, Kind: timeline.PhaseStart, Phase: "fault"})
	for i := 0; i < 100; i++ {
		tl.Requests = append(tl.Requests, timeline.Request{Phase: "fault", Time: t0.Add(time.Duration(i) * 20 * time.Millisecond), Status: 200, Target: "GET /x"})
	}
	queries := 1000.0
	for i := 0; i <= 20; i++ {
		at := time.Duration(i) * 100 * time.Millisecond
		open := openAt >= 0 && at >= openAt
		state := func(s string, on bool) any {
			v := 0
			if on {
				v = 1
			}
			return promSeries(map[string]any{"breaker": "db", "state": s}, float64(v))
		}
		if i > 0 {
			queries += perSample
		}
		if reset && i == 10 {
			queries = perSample
		}
		obs := float64(10 * i) // ten observations a sample
		fams := map[string]any{
			"shop_db_queries_total": []any{
				promSeries(map[string]any{"kind": "product"}, queries),
				promSeries(map[string]any{"kind": "order_write"}, 7.0),
			},
			"shop_circuit_breaker_state": []any{state("closed", !open), state("open", open), state("half_open", false)},
			"shop_request_duration_seconds_bucket": []any{
				promSeries(map[string]any{"route": "product", "le": "0.1"}, 500.0),
				promSeries(map[string]any{"route": "product", "le": "0.25"}, 500+obs),
				promSeries(map[string]any{"route": "product", "le": "+Inf"}, 500+obs),
			},
			"shop_health_score": []any{promSeries(map[string]any{"dependency": "db"}, 1-float64(i)/40)},
		}
		tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(at), Kind: timeline.Metrics, Data: map[string]any{"metrics": fams}})
	}
	tl.Events = append(tl.Events, timeline.Event{Time: t0.Add(2 * time.Second), Kind: timeline.PhaseEnd, Phase: "fault"})
	return tl
}

func TestMetricForms(t *testing.T) {
	tests := []struct {
		expect   string
		tl       *timeline.Timeline
		want     Outcome
		measured string
	}{
		{`increase(shop_db_queries_total{kind="product"}) <= 1.1 * count`, metricTimeline(5, -1, false), Pass, "100 over 2s (21 samples, 100 requests)"},
		{`increase(shop_db_queries_total{kind="product"}) <= 1.1 * count`, metricTimeline(6, -1, false), Fail, "120 over 2s (21 samples, 100 requests)"},
		// A reset is a restart from zero, not a fall.
		{`increase(shop_db_queries_total{kind="product"}) == 100`, metricTimeline(5, -1, false), Pass, ""},
		{`increase(shop_db_queries_total{kind="product"}) == 100`, metricTimeline(5, -1, true), Pass, ""},
		// Matching several series adds them up; order writes never grow.
		{`increase(shop_db_queries_total) == 100`, metricTimeline(5, -1, false), Pass, ""},
		{`increase(shop_db_queries_total{kind!="product"}) == 0`, metricTimeline(5, -1, false), Pass, ""},
		{`increase(shop_db_queries_total{kind=~"prod.*"}) == 100`, metricTimeline(5, -1, false), Pass, ""},
		{`increase(shop_db_queries_total{kind=~"prod"}) == 0`, metricTimeline(5, -1, false), Inconclusive, ""}, // anchored: no series matches
		{`rate(shop_db_queries_total{kind="product"}) == 50`, metricTimeline(5, -1, false), Pass, "50/s (100 over 2s (21 samples, 100 requests))"},
		{`increase(no_such_total) <= 10`, metricTimeline(5, -1, false), Inconclusive, ""},
		{`max(shop_circuit_breaker_state{breaker="db",state="open"}) == 1`, metricTimeline(0, 1500*time.Millisecond, false), Pass, "1 at +1.5s (20 samples)"},
		{`max(shop_circuit_breaker_state{breaker="db",state="open"}) == 1`, metricTimeline(0, -1, false), Fail, "0 at +100ms (20 samples)"},
		{`min(shop_health_score{dependency="db"}) >= 0.6`, metricTimeline(0, -1, false), Fail, "0.5 at +2s (20 samples)"},
		{`last(shop_health_score) < 0.6`, metricTimeline(0, -1, false), Pass, ""},
		{`avg(shop_health_score) > 0.7`, metricTimeline(0, -1, false), Pass, ""},
		{`histogram_quantile(0.5, shop_request_duration_seconds{route="product"}) < 200ms`, metricTimeline(0, -1, false), Pass, "175ms (of 200 observations)"},
		{`histogram_quantile(0.99, shop_request_duration_seconds_bucket{route="product"}) <= 0.25`, metricTimeline(0, -1, false), Pass, "0.2485 (of 200 observations)"},
		{`histogram_quantile(0.99, shop_request_duration_seconds{route="search"}) < 1s`, metricTimeline(0, -1, false), Inconclusive, ""},
		// The breaker forms read the state metric when there is no state endpoint.
		{`breaker("db") never opens`, metricTimeline(0, -1, false), Pass, "closed in all 21 samples"},
		{`breaker("db") never opens`, metricTimeline(0, 1500*time.Millisecond, false), Fail, "open at +1.5s"},
	}
	for _, tt := range tests {
		c, err := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{tt.expect}}))
		if err != nil {
			t.Fatalf("%s: %v", tt.expect, err)
		}
		got := c.Evaluate(tt.tl).Checks[0]
		if got.Outcome != tt.want || (tt.measured != "" && got.Measured != tt.measured) {
			t.Errorf("%s: %s %q (%s), want %s %q", tt.expect, got.Outcome, got.Measured, got.Reason, tt.want, tt.measured)
		}
	}
}

// The breaker's opening, timed from a fault, on metric samples.
func TestBreakerOpensOnMetrics(t *testing.T) {
	tl := metricTimeline(0, 300*time.Millisecond, false)
	tl.Events = append(tl.Events, timeline.Event{Time: tl.Meta.Start, Kind: timeline.FaultOn, Phase: "fault", Point: "store/productQuery"})
	c, err := Compile(conv(Spec{Name: "c", Phase: "fault", Expect: []string{`breaker("db") opens within 500ms`}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Evaluate(tl).Checks[0]; got.Outcome != Pass || got.Measured != "open 300ms after fault start" {
		t.Fatalf("%s %q (%s)", got.Outcome, got.Measured, got.Reason)
	}
	if names, from := BreakerNames(tl); len(names) != 1 || names[0] != "db" || from != "metric samples" {
		t.Fatalf("breakers %q from %q", names, from)
	}
	if s := BreakerSamples(tl, "db"); len(s) == 0 || s[0].State != "closed" || s[len(s)-1].State != "open" {
		t.Fatalf("breaker samples %+v", s)
	}
}

func TestMetricFormErrors(t *testing.T) {
	for _, tt := range []struct{ expect, want string }{
		{`increase(x_total{kind=product}) < 1`, `selector x_total{kind=product} does not parse: unexpected identifier "product" in label matching, expected string`},
		{`increase(x_total{kind=~"("}) < 1`, "regexp"},
		{`max(x_state) == lots`, "bad bound"},
		{`histogram_quantile(1.5, x_seconds) < 1s`, "quantile 1.5 is not between 0 and 1"},
		{`histogram_quantile(0.9, x_seconds) < soon`, `"soon" is not a number`},
	} {
		_, err := Compile(conv(Spec{Name: "c", Expect: []string{tt.expect}}))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.expect, err, tt.want)
		}
	}
}

// TestSelectorsReadAsPromQL: a selector means what it means to a
// Prometheus server, whose parser reads it: single quotes, backquotes and
// a trailing comma are PromQL; regexps are anchored; an empty value
// matches a series without the label.
func TestSelectorsReadAsPromQL(t *testing.T) {
	series := map[string]any{"code": "503", "route": "product"}
	for _, tt := range []struct {
		braces string
		want   bool
	}{
		{`{code=~"5.."}`, true},
		{`{code=~"5"}`, false},
		{`{code='503',}`, true},
		{"{route=`prod.*`}", false},
		{"{route=~`prod.*`}", true},
		{`{code!~"4..|5.."}`, false},
		{`{tenant=""}`, true},
		{`{route="product", code!="503"}`, false},
	} {
		sel, err := parseSelector("x"+tt.braces, "x", tt.braces)
		if err != nil {
			t.Errorf("%s: %v", tt.braces, err)
			continue
		}
		if got := sel.matches(series); got != tt.want {
			t.Errorf("%s matches %v: %v, want %v", tt.braces, series, got, tt.want)
		}
	}
}

func TestMetricNames(t *testing.T) {
	for _, tt := range []struct {
		expect string
		want   []string
	}{
		{`increase(shop_db_queries_total{kind="product"}) <= 0.05 * count`, []string{"shop_db_queries_total"}},
		{`histogram_quantile(0.99, shop_seconds{route="x"}) < 1s`, []string{"shop_seconds_bucket"}},
		{`histogram_quantile(0.99, shop_seconds_bucket) < 1s`, []string{"shop_seconds_bucket"}},
		{`breaker("db") opens within 1s`, []string{"*circuit_breaker_state"}},
		{`breaker("db") never opens`, []string{"*circuit_breaker_state"}},
		{`increase("db.product_queries") <= 10`, nil},
		{`p99 latency < 1s`, nil},
	} {
		if got := MetricNames(tt.expect); !slices.Equal(got, tt.want) {
			t.Errorf("MetricNames(%s) = %q, want %q", tt.expect, got, tt.want)
		}
	}
}
