package contract

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/chaoskit/chaoskit/timeline"
)

// Forms judged on the target's Prometheus metrics, sampled during the run
// (target.metrics), in a syntax close to PromQL's:
//
//	increase(chaoskit_demo_db_queries_total{kind="product"}) <= 0.05 * count
//	rate(http_requests_total{code=~"5.."}) < 1
//	max(chaoskit_demo_circuit_breaker_state{breaker="db",state="open"}) == 1
//	histogram_quantile(0.99, chaoskit_demo_request_duration_seconds{route="product"}) < 250ms
var (
	metricAggForm = regexp.MustCompile(`^(increase|rate|max|min|avg|last)\(\s*(` + metricNamePat + `)\s*(\{[^}]*\})?\s*\)\s*` + opPat + `\s*(.+)$`)
	quantileForm  = regexp.MustCompile(`^histogram_quantile\(\s*` + numPat + `\s*,\s*(` + metricNamePat + `)\s*(\{[^}]*\})?\s*\)\s*` + opPat + `\s*(.+)$`)
)

const metricNamePat = `[a-zA-Z_:][a-zA-Z0-9_:]*`

// breakerStateSuffix names the family prombreaker exports breaker states
// in, whatever its namespace: NAMESPACE_circuit_breaker_state{breaker,state}.
const breakerStateSuffix = "circuit_breaker_state"

// isMetricForm says whether an expectation is one of the metric forms.
func isMetricForm(s string) bool {
	return metricAggForm.MatchString(s) || quantileForm.MatchString(s)
}

// MetricNames returns the names of the metric families an expectation
// reads, so that the runner records only those: the selector's name (with
// _bucket for histogram_quantile), and "*circuit_breaker_state" (any name
// with that suffix) for the breaker forms, which read breaker states from
// metrics when the target serves no state endpoint. It returns nil for
// any other expectation.
func MetricNames(expect string) []string {
	s := strings.Join(strings.Fields(expect), " ")
	switch {
	case quantileForm.MatchString(s):
		name := strings.TrimSuffix(quantileForm.FindStringSubmatch(s)[2], "_bucket")
		return []string{name + "_bucket"}
	case metricAggForm.MatchString(s):
		return []string{metricAggForm.FindStringSubmatch(s)[2]}
	case breakerForm.MatchString(s), neverForm.MatchString(s):
		return []string{"*" + breakerStateSuffix}
	}
	return nil
}

// selector is a metric name and its label matchers, as PromQL reads them.
type selector struct {
	name     string
	matchers []*labels.Matcher
	text     string
}

// parseSelector parses `{a="x", b=~"y.*"}` (braces included, or empty)
// after the metric name with Prometheus's own parser, so that a selector
// means here what it means to a Prometheus server: anchored regexps,
// escapes, `'` and backquoted strings, a trailing comma.
func parseSelector(src, name, braces string) (selector, error) {
	sel := selector{name: name, text: name + braces}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(name + braces)
	if err != nil {
		return sel, valueError(src, strings.TrimSpace(braces), fmt.Sprintf("selector %s does not parse: %v", sel.text, selectorError(err)),
			`write label="value", label!="value", label=~"regexp" or label!~"regexp", separated by commas`)
	}
	for _, m := range ms {
		if m.Name != labels.MetricName {
			sel.matchers = append(sel.matchers, m)
		}
	}
	return sel, nil
}

// selectorError is the parser's message without the position, which is
// within the selector, not the scenario file.
func selectorError(err error) string {
	var perrs parser.ParseErrors
	if errors.As(err, &perrs) && len(perrs) > 0 {
		return perrs[0].Err.Error()
	}
	return err.Error()
}

func (s selector) matches(lbls map[string]any) bool {
	for _, m := range s.matchers {
		v, _ := lbls[m.Name].(string)
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

// metricSample is one scrape: every series of the recorded families, each
// with its labels and value.
type metricSample struct {
	t        time.Time
	families map[string]any
}

// metricSamples returns the timeline's metric samples in time order.
func metricSamples(tl *timeline.Timeline) []metricSample {
	var out []metricSample
	for _, e := range tl.Events {
		if e.Kind != timeline.Metrics {
			continue
		}
		if fams, ok := e.Data["metrics"].(map[string]any); ok {
			out = append(out, metricSample{e.Time, fams})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].t.Before(out[j].t) })
	return out
}

// series calls fn for every series of family name in the sample.
func (m metricSample) series(name string, fn func(labels map[string]any, v float64)) {
	list, _ := m.families[name].([]any)
	for _, item := range list {
		s, ok := item.(map[string]any)
		if !ok {
			continue
		}
		labels, _ := s["labels"].(map[string]any)
		v, ok := sampleValue(s["value"])
		if ok {
			fn(labels, v)
		}
	}
}

// sampleValue reads a series' value: a number, or a string for NaN and
// ±Inf, which JSON cannot hold.
func sampleValue(v any) (float64, bool) {
	if s, ok := v.(string); ok {
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return timeline.Number(v)
}

// seriesKey identifies a series by its labels, less the ones named in
// drop.
func seriesKey(labels map[string]any, drop string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		if k != drop {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v, _ := labels[k].(string)
		fmt.Fprintf(&b, "%s=%q,", k, v)
	}
	return b.String()
}

// windowSamples returns the samples that judge a window: the last at or
// before its start (the counters' values when it opens), then those inside
// it.
func windowSamples(all []metricSample, w *window) []metricSample {
	var out []metricSample
	for _, s := range all {
		switch {
		case !s.t.After(w.start):
			out = append(out[:0], s)
		case !s.t.After(w.end):
			out = append(out, s)
		}
	}
	return out
}

// scrapeTimes is the time of every scrape in samples: the moments the
// metrics endpoint answered.
func scrapeTimes(samples []metricSample) []time.Time {
	out := make([]time.Time, len(samples))
	for i, s := range samples {
		out[i] = s.t
	}
	return out
}

// seriesTimes are the times of the samples that hold a series of family
// name matching sel.
func seriesTimes(samples []metricSample, name string, sel selector) []time.Time {
	var out []time.Time
	for _, s := range samples {
		found := false
		s.series(name, func(labels map[string]any, _ float64) {
			found = found || sel.matches(labels)
		})
		if found {
			out = append(out, s.t)
		}
	}
	return out
}

// increaseOf is how much the matching series of family name grew over
// samples, summed over series, with counter resets (a value that falls)
// counted as a restart from zero. A series first seen after the first
// sample started at zero (a labelled child made during the window).
// groupBy, if set, keeps the sums apart by that label (histogram buckets by
// le). It returns how many samples it read, zero if no sample holds a
// matching series.
func increaseOf(samples []metricSample, name string, sel selector, groupBy string) (map[string]float64, int) {
	last := map[string]float64{}
	inc := map[string]float64{}
	found := false
	for i, s := range samples {
		s.series(name, func(labels map[string]any, v float64) {
			if !sel.matches(labels) {
				return
			}
			found = true
			key := seriesKey(labels, "")
			group := ""
			if groupBy != "" {
				group, _ = labels[groupBy].(string)
			}
			prev, ok := last[key]
			switch {
			case !ok && i == 0:
				// the value when the window opened
			case !ok:
				inc[group] += v
			case v < prev:
				inc[group] += v // reset
			default:
				inc[group] += v - prev
			}
			if _, ok := inc[group]; !ok {
				inc[group] = 0
			}
			last[key] = v
		})
	}
	if !found {
		return inc, 0
	}
	return inc, len(samples)
}

// metricCheck is one of increase, rate, max, min, avg and last over a
// selector, or over the points a Prometheus server gave for a query.
type metricCheck struct {
	src   string
	fn    string
	sel   selector
	op    string
	bound *vm.Program
	text  string
	// query, when set, is PromQL the server evaluated (promql(...)): the
	// samples are its points, not the target's scrapes.
	query string
}

// quantileCheck is histogram_quantile(Q, SELECTOR) OP VALUE over the
// observations of the window.
type quantileCheck struct {
	src      string
	q        float64
	sel      selector
	op       string
	want     float64 // seconds, or a plain number
	wantText string
	duration bool
}

// compileMetricForm compiles a metric form; s is src with its spaces
// collapsed. query is the PromQL of a promql(...) form (s then names the
// family promqlFamily), "" for the target's own metrics.
func compileMetricForm(src, s, query string) (check, error) {
	if m := quantileForm.FindStringSubmatch(s); m != nil {
		q, _ := strconv.ParseFloat(m[1], 64)
		if q < 0 || q > 1 {
			return nil, valueError(src, m[1], fmt.Sprintf("quantile %s is not between 0 and 1", m[1]), "write 0.99 for the 99th percentile")
		}
		sel, err := parseSelector(src, strings.TrimSuffix(m[2], "_bucket"), m[3])
		if err != nil {
			return nil, err
		}
		c := &quantileCheck{src: src, q: q, sel: sel, op: m[4], wantText: m[5]}
		if usesBaseline(m[5]) {
			// A histogram in seconds shows, and bounds, as durations.
			c.duration = strings.HasSuffix(sel.name, "_seconds")
			u := unitNum
			if c.duration {
				u = unitSec
			}
			return newBaselined(src, m[4], m[5], u, c, false)
		}
		if durValue.MatchString(m[5]) {
			d, err := durationArg(src, m[5])
			c.want, c.duration = d.Seconds(), true
			return c, err
		}
		c.want, err = numberArg(src, m[5])
		return c, err
	}
	m := metricAggForm.FindStringSubmatch(s)
	sel, err := parseSelector(src, m[2], m[3])
	if err != nil {
		return nil, err
	}
	if query != "" {
		sel.text = "promql(`" + query + "`)"
	}
	if usesBaseline(m[5]) {
		return newBaselined(src, m[4], m[5], unitNum, &metricCheck{src: src, fn: m[1], sel: sel, op: m[4], query: query}, false)
	}
	prog, err := expr.Compile(m[5], expr.Env(boundEnv{}), expr.AsFloat64())
	if err != nil {
		return nil, &SyntaxError{Column: strings.Index(src, m[5]) + 1, Msg: "bad bound: " + firstLine(err.Error()),
			Hint: "a bound is a number or an expression of count, rps and seconds, e.g. 0.05 * count"}
	}
	return &metricCheck{src: src, fn: m[1], sel: sel, op: m[4], bound: prog, text: m[5], query: query}, nil
}

func (c *metricCheck) start(w *window) acc {
	return metricAcc{c, w}
}

// metricAcc judges a metric form, or gives its figure to a baselined one.
type metricAcc struct {
	c *metricCheck
	w *window
}

func (metricAcc) add(*timeline.Request, bool, *classed) {}
func (a metricAcc) result() CheckResult                 { return a.c.evaluate(a.w) }
func (a metricAcc) figure() figure                      { return a.c.figureOf(a.w) }

func (c *metricCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src}
	out, err := expr.Run(c.bound, w.boundEnv())
	if err != nil {
		return inconclusive(res, "cannot compute the bound: "+err.Error())
	}
	bound, _ := out.(float64)
	res.Expected = boundText(c.op, c.text, bound)
	f := c.figureOf(w)
	res.Samples = f.samples
	if f.none != "" {
		return inconclusive(res, f.none)
	}
	res.Measured = f.shown
	res.Matched = f.matched
	res.Outcome = outcome(compare(f.v, c.op, bound))
	res.measured(f.v, c.op, bound, "")
	return res
}

// boundText is a bound as written and, when it is an expression, its
// value: "<= 0.05 * count = 17.5".
func boundText(op, text string, value float64) string {
	if v := fmtNum(value); v != text {
		return op + " " + text + " = " + v
	}
	return op + " " + text
}

// figureOf measures the form over w.
func (c *metricCheck) figureOf(w *window) (f figure) {
	secs := w.end.Sub(w.start).Seconds()
	var samples []metricSample
	var step time.Duration // the interval the points were asked at; 0: scrapes, their median interval
	what, where := "metric samples", "the target must export it on its metrics endpoint (target.metrics)"
	if c.query != "" {
		samples, step, f.none = promqlSamples(w.tl, c.query, w)
		if f.none != "" {
			return f
		}
		what, where = "points", "the server's answer holds no sample of it then"
	} else {
		samples = windowSamples(metricSamples(w.tl), w)
	}
	defer func() {
		if f.none == "" {
			times := seriesTimes(samples, c.sel.name, c.sel)
			if c.fn == "increase" || c.fn == "rate" {
				// A counter absent from a scrape that answered is a
				// counter not made yet, at zero (increaseOf counts it so):
				// what can leave a gap is a scrape that did not answer.
				times = scrapeTimes(samples)
			}
			if why := gapReasonEvery("the "+what+" with "+c.sel.text, times, w.start, w.end, step); why != "" {
				f = figure{none: why, samples: f.samples}
			}
		}
	}()
	switch c.fn {
	case "increase", "rate":
		inc, n := increaseOf(samples, c.sel.name, c.sel, "")
		if n < 2 {
			f.none = fmt.Sprintf("fewer than two %s with %s in the window; %s", what, c.sel.text, where)
			return f
		}
		f.v, f.samples = inc[""], n
		f.shown = fmt.Sprintf("%s over %s (%d samples, %d requests)", fmtNum(f.v), fmtDur(w.end.Sub(w.start)), n, w.n)
		if c.fn == "rate" {
			if secs <= 0 {
				f.none = "the window has no length"
				return f
			}
			f.v /= secs
			f.shown = fmt.Sprintf("%s/s (%s)", fmtNum(f.v), f.shown)
		}
		f.matched = int(f.v)
	default:
		var values []float64
		var at []time.Time
		for _, s := range samples {
			if !s.t.After(w.start) {
				continue // before the window: only the counters need it
			}
			sum, found := 0.0, false
			s.series(c.sel.name, func(labels map[string]any, v float64) {
				if c.sel.matches(labels) {
					sum, found = sum+v, true
				}
			})
			if found {
				values, at = append(values, sum), append(at, s.t)
			}
		}
		if len(values) == 0 {
			f.none = fmt.Sprintf("no %s with %s in the window; %s", strings.TrimSuffix(what, "s"), c.sel.text, where)
			return f
		}
		i := 0
		switch c.fn {
		case "max":
			i = indexOf(values, func(a, b float64) bool { return a > b })
		case "min":
			i = indexOf(values, func(a, b float64) bool { return a < b })
		case "last":
			i = len(values) - 1
		}
		if c.fn == "avg" {
			for _, v := range values {
				f.v += v
			}
			f.v /= float64(len(values))
			f.shown = fmt.Sprintf("%s over %d samples", fmtNum(f.v), len(values))
		} else {
			f.v = values[i]
			f.shown = fmt.Sprintf("%s at +%s (%d samples)", fmtNum(f.v), fmtDur(at[i].Sub(w.start)), len(values))
		}
		f.samples = len(values)
	}
	return f
}

// indexOf returns the index of the value that wins better against every
// other, the first of equals.
func indexOf(values []float64, better func(a, b float64) bool) int {
	best := 0
	for i, v := range values {
		if better(v, values[best]) {
			best = i
		}
	}
	return best
}

func (c *quantileCheck) start(w *window) acc {
	return quantileAcc{c, w}
}

// quantileAcc judges histogram_quantile, or gives its figure (in seconds,
// or the histogram's unit) to a baselined one.
type quantileAcc struct {
	c *quantileCheck
	w *window
}

func (quantileAcc) add(*timeline.Request, bool, *classed) {}
func (a quantileAcc) result() CheckResult                 { return a.c.evaluate(a.w) }
func (a quantileAcc) figure() figure                      { return a.c.figureOf(a.w) }

func (c *quantileCheck) figureOf(w *window) (f figure) {
	samples := windowSamples(metricSamples(w.tl), w)
	defer func() {
		if f.none == "" {
			// A histogram's series absent from a scrape that answered had
			// no observation yet: zero, not unknown.
			if why := gapReason("the metric samples of histogram "+c.sel.text, scrapeTimes(samples), w.start, w.end); why != "" {
				f = figure{none: why, samples: f.samples}
			}
		}
	}()
	inc, n := increaseOf(samples, c.sel.name+"_bucket", c.sel, "le")
	if n < 2 {
		f.none = fmt.Sprintf("fewer than two metric samples of histogram %s in the window; the target must export it on its metrics endpoint (target.metrics)", c.sel.text)
		return f
	}
	q, total, ok := histogramQuantile(c.q, inc)
	f.samples = int(total)
	if !ok {
		f.none = fmt.Sprintf("histogram %s has no observation in the window", c.sel.text)
		return f
	}
	f.v = q
	if c.duration {
		f.shown = fmt.Sprintf("%s (of %d observations)", fmtDur(time.Duration(q*float64(time.Second))), int(total))
	} else {
		f.shown = fmt.Sprintf("%s (of %d observations)", fmtNum(q), int(total))
	}
	return f
}

func (c *quantileCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}
	f := c.figureOf(w)
	res.Samples = f.samples
	if f.none != "" {
		return inconclusive(res, f.none)
	}
	res.Measured = f.shown
	res.Outcome = outcome(compare(f.v, c.op, c.want))
	res.measured(f.v, c.op, c.want, "")
	return res
}

// histogramQuantile is Prometheus's histogram_quantile over cumulative
// bucket counts by upper bound ("le"): the bucket the rank falls in, then
// linear interpolation inside it (from 0 for the first bucket); a rank in
// the +Inf bucket reads as the highest finite bound.
func histogramQuantile(q float64, byLE map[string]float64) (value, total float64, ok bool) {
	type bucket struct{ le, count float64 }
	var bs []bucket
	for le, n := range byLE {
		f, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		bs = append(bs, bucket{f, n})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].le, 1) {
		return 0, 0, false
	}
	total = bs[len(bs)-1].count
	if total <= 0 {
		return 0, total, false
	}
	rank := q * total
	for i, b := range bs {
		if b.count < rank {
			continue
		}
		if math.IsInf(b.le, 1) {
			if i == 0 {
				return 0, total, true
			}
			return bs[i-1].le, total, true
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = bs[i-1].le, bs[i-1].count
		}
		if b.count == below {
			return b.le, total, true
		}
		return lo + (b.le-lo)*(rank-below)/(b.count-below), total, true
	}
	return bs[len(bs)-1].le, total, true
}

// metricBreakerSamples reads a breaker's states from metric samples of
// *circuit_breaker_state{breaker=name,state=…}: the state whose series is
// 1.
func metricBreakerSamples(tl *timeline.Timeline, name string) []StateSample {
	var out []StateSample
	for _, s := range metricSamples(tl) {
		for fam := range s.families {
			if !strings.HasSuffix(fam, breakerStateSuffix) {
				continue
			}
			s.series(fam, func(labels map[string]any, v float64) {
				if b, _ := labels["breaker"].(string); b != name || v != 1 {
					return
				}
				if st, ok := labels["state"].(string); ok {
					out = append(out, StateSample{s.t, strings.ReplaceAll(st, "_", "-")})
				}
			})
		}
	}
	return out
}

// metricBreakerNames returns the breakers named in metric samples.
func metricBreakerNames(tl *timeline.Timeline) []string {
	names := map[string]bool{}
	for _, s := range metricSamples(tl) {
		for fam := range s.families {
			if strings.HasSuffix(fam, breakerStateSuffix) {
				s.series(fam, func(labels map[string]any, _ float64) {
					if b, ok := labels["breaker"].(string); ok {
						names[b] = true
					}
				})
			}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
