package contract

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// Forms judged on PromQL that a Prometheus server evaluates (the
// scenario's prometheus: section), as Argo Rollouts' analysis and Litmus's
// promProbe ask one:
//
//	max(promql(`sum(rate(http_requests_total{code=~"5.."}[30s]))`)) <= 0.5
//	increase(promql(`sum(app_requests_total)`)) >= 0.9 * count
//
// After the last phase the runner asks the server once per query for the
// whole run (/api/v1/query_range, one point per step) and records the
// answer on the timeline (a promql event); the judge never calls the
// server. A form takes the points of its window as the metric forms take
// scrapes: increase and rate from the last point at or before the window's
// start to the last inside it, max, min, avg and last over the points
// inside it. The query may be quoted with backquotes (no escapes, the
// easiest in YAML), double or single quotes.
var promqlForm = regexp.MustCompile(`^(increase|rate|max|min|avg|last)\(\s*promql\(\s*(` + "`[^`]*`" + `|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')\s*\)\s*\)\s*` + opPat + `\s*(.+)$`)

// promqlFamily is the family name the points of a query are held under,
// so that the metric forms' code reads them as it reads scrapes.
const promqlFamily = "promql"

// PromQLQuery returns the query of a promql(...) form, and false for any
// other expectation. The runner asks the server each such query.
func PromQLQuery(expect string) (string, bool) {
	m := promqlForm.FindStringSubmatch(strings.Join(strings.Fields(expect), " "))
	if m == nil {
		return "", false
	}
	q, err := unquoteQuery(m[2])
	return q, err == nil
}

// unquoteQuery reads a query quoted as PromQL quotes strings: backquotes
// (raw), double or single quotes (Go escapes).
func unquoteQuery(lit string) (string, error) {
	if strings.HasPrefix(lit, "'") {
		inner := lit[1 : len(lit)-1]
		inner = strings.ReplaceAll(inner, `\'`, `'`)
		inner = strings.ReplaceAll(inner, `"`, `\"`)
		lit = `"` + inner + `"`
	}
	return strconv.Unquote(lit)
}

// compilePromQL compiles a promql(...) form; s is src with its spaces
// collapsed.
func compilePromQL(src, s string) (check, error) {
	m := promqlForm.FindStringSubmatch(s)
	if m == nil {
		return nil, &SyntaxError{Column: strings.Index(src, "promql(") + 1, Msg: "promql(...) must be read through increase, rate, max, min, avg or last",
			Hint: "write max(promql(`sum(rate(errors_total[30s]))`)) <= 0.5, the query in backquotes"}
	}
	q, err := unquoteQuery(m[2])
	if err != nil {
		return nil, valueError(src, m[2], fmt.Sprintf("query %s does not read as a string", m[2]), "quote it with backquotes: promql(`QUERY`)")
	}
	if strings.TrimSpace(q) == "" {
		return nil, valueError(src, m[2], "promql(...) has an empty query", "write the PromQL to evaluate, such as promql(`sum(up)`)")
	}
	// The same code as the metric forms, over the server's points.
	return compileMetricForm(src, m[1]+"("+promqlFamily+") "+m[3]+" "+m[4], q)
}

// promqlSamples returns the points the server gave for query inside w
// (and the last at or before its start), as samples of one family
// (promqlFamily) in time order, the step they were asked at, and why they
// cannot judge the window ("" when they can): no answer recorded, an error
// of the server's, no point at all (an empty result), or several series at
// one step where one is needed.
func promqlSamples(tl *timeline.Timeline, query string, w *window) (samples []metricSample, step time.Duration, none string) {
	name := "promql(`" + query + "`)"
	var ev *timeline.Event
	for i := range tl.Events {
		if e := &tl.Events[i]; e.Kind == timeline.PromQL && e.Message == query {
			ev = e
		}
	}
	if ev == nil {
		return nil, 0, fmt.Sprintf("no answer of the Prometheus server to %s is recorded: the run asks it after the last phase (prometheus: in the scenario)", name)
	}
	if why, _ := ev.Data["error"].(string); why != "" {
		return nil, 0, fmt.Sprintf("the Prometheus server could not evaluate %s: %s", name, why)
	}
	if ns, ok := timeline.Number(ev.Data["step_ns"]); ok {
		step = time.Duration(ns)
	}
	byTime := map[int64][]any{}
	labelsAt := map[int64][]string{}
	series, _ := ev.Data["series"].([]any)
	for _, item := range series {
		s, _ := item.(map[string]any)
		labels, _ := s["labels"].(map[string]any)
		values, _ := s["values"].([]any)
		for _, p := range values {
			pair, _ := p.([]any)
			if len(pair) != 2 {
				continue
			}
			secs, ok := timeline.Number(pair[0])
			if !ok {
				continue
			}
			v, ok := sampleValue(pair[1])
			if !ok || math.IsNaN(v) {
				continue // NaN: no figure at that step (0/0 of a ratio)
			}
			ms := int64(math.Round(secs * 1000))
			byTime[ms] = append(byTime[ms], map[string]any{"labels": labels, "value": v})
			labelsAt[ms] = append(labelsAt[ms], seriesKey(labels, ""))
		}
	}
	times := make([]int64, 0, len(byTime))
	for ms := range byTime {
		times = append(times, ms)
	}
	slices.Sort(times)
	all := make([]metricSample, 0, len(times))
	for _, ms := range times {
		all = append(all, metricSample{time.UnixMilli(ms), map[string]any{promqlFamily: byTime[ms]}})
	}
	samples = windowSamples(all, w)
	for _, s := range samples {
		ms := s.t.UnixMilli()
		if n := len(byTime[ms]); n > 1 {
			keys := labelsAt[ms]
			slices.Sort(keys)
			return nil, step, fmt.Sprintf("%s gave %d series at +%s (%s), want one: aggregate it, such as sum(...)", name, n, fmtDur(s.t.Sub(w.start)), strings.Join(keys, " "))
		}
	}
	if len(samples) == 0 {
		return nil, step, fmt.Sprintf("%s gave no sample in the window (an empty result: no such series, or none the server scraped then)", name)
	}
	return samples, step, ""
}
