package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// prometheusClient returns the client that reads Prometheus servers: on
// loopback and the hosts allow allows only, as every request chaoskit
// makes, following no redirect.
func prometheusClient(allow *reach.Policy) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:       allow.Dial(&net.Dialer{}),
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// maxPrometheusAnswer bounds the answer read: one sample is a few hundred
// bytes, a range of 10,000 points of one series a few hundred KB; a query
// that selects thousands of series is refused anyway.
const maxPrometheusAnswer = 16 << 20

// promTime writes t as the API's Unix seconds, to the millisecond.
func promTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// getPrometheus GETs path?params from the Prometheus server at base and
// decodes its API answer; an error of the server's, an answer that is not
// its API's JSON, or no answer is an error.
func getPrometheus(ctx context.Context, allow *reach.Policy, base, path string, params url.Values) (resultType string, result json.RawMessage, err error) {
	u := strings.TrimSuffix(base, "/") + path + "?" + params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", nil, err
	}
	resp, err := prometheusClient(allow).Do(req)
	if err != nil {
		return "", nil, fmt.Errorf("prometheus: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPrometheusAnswer))
	if err != nil {
		return "", nil, fmt.Errorf("prometheus: %v", err)
	}
	var ans struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		if len(body) == maxPrometheusAnswer {
			return "", nil, fmt.Errorf("prometheus: an answer over %d bytes", maxPrometheusAnswer)
		}
		return "", nil, fmt.Errorf("prometheus answered %s, not its API's JSON: %q", resp.Status, shortBody(body))
	}
	if ans.Status != "success" {
		return "", nil, fmt.Errorf("prometheus: %s: %s", ans.ErrorType, ans.Error)
	}
	return ans.Data.ResultType, ans.Data.Result, nil
}

// queryPrometheus evaluates query on the Prometheus server at base at time
// at (GET /api/v1/query) and returns its one sample. No sample, several, an
// error of the server's or no answer is an error: the reading is unknown.
func queryPrometheus(ctx context.Context, allow *reach.Policy, base, query string, at time.Time) (float64, error) {
	resultType, result, err := getPrometheus(ctx, allow, base, "/api/v1/query", url.Values{
		"query": {query},
		"time":  {promTime(at)},
	})
	if err != nil {
		return 0, err
	}
	var sample []any
	switch resultType {
	case "scalar":
		if err := json.Unmarshal(result, &sample); err != nil {
			return 0, fmt.Errorf("prometheus: a scalar result that does not read: %v", err)
		}
	case "vector":
		var series []struct {
			Value []any `json:"value"`
		}
		if err := json.Unmarshal(result, &series); err != nil {
			return 0, fmt.Errorf("prometheus: a vector result that does not read: %v", err)
		}
		if len(series) != 1 {
			return 0, fmt.Errorf("prometheus: %q gave %d series, want one (aggregate it: sum(...))", query, len(series))
		}
		sample = series[0].Value
	default:
		return 0, fmt.Errorf("prometheus: %q gave a %s, want one sample (an instant vector of one series, or a scalar)", query, resultType)
	}
	if len(sample) != 2 {
		return 0, fmt.Errorf("prometheus: a sample of %d fields", len(sample))
	}
	text, _ := sample[1].(string)
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("prometheus: sample %q is not a number", text)
	}
	return v, nil
}

// maxPromQLSeries is the most series of one answer recorded: a form needs
// one, and more than one is inconclusive whatever they hold.
const maxPromQLSeries = 10

// queryRange evaluates query on the server at base from start to end, one
// point every step (GET /api/v1/query_range), and returns what a PromQL
// event records: the server, the step and the series, their values as the
// API writes them ([UNIX SECONDS, "VALUE"]), or why there is none.
func queryRange(ctx context.Context, allow *reach.Policy, base, query string, start, end time.Time, step time.Duration) map[string]any {
	data := map[string]any{"server": base, "step_ns": float64(step), "start": start.UTC().Format(time.RFC3339Nano), "end": end.UTC().Format(time.RFC3339Nano)}
	resultType, result, err := getPrometheus(ctx, allow, base, "/api/v1/query_range", url.Values{
		"query": {query},
		"start": {promTime(start)},
		"end":   {promTime(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
	if err == nil && resultType != "matrix" {
		err = fmt.Errorf("prometheus: %q gave a %s, want a range (a matrix)", query, resultType)
	}
	var series []any
	if err == nil {
		err = json.Unmarshal(result, &series)
	}
	if err != nil {
		data["error"] = err.Error()
		return data
	}
	if len(series) > maxPromQLSeries {
		data["series_count"] = float64(len(series))
		series = series[:maxPromQLSeries]
	}
	data["series"] = series
	return data
}

// recordPromQL asks the scenario's Prometheus server every query of its
// contracts over the whole run, once the server has scraped the run's end
// (or Wait has passed), and records each answer as a PromQL event. A
// server that does not answer gives events with the error: unknown, for
// the judge to call inconclusive; it never fails the run.
func (r *run) recordPromQL(ctx context.Context) {
	p := r.sc.Prometheus
	phases := r.tl.Phases()
	if p == nil || len(p.Queries) == 0 || len(phases) == 0 {
		return
	}
	first, last := phases[0].Start, phases[0].End
	for _, ph := range phases[1:] {
		if ph.End.After(last) {
			last = ph.End
		}
	}
	step := p.Step.D()
	if span := last.Sub(first); span/step > plan.MaxPromQLPoints {
		step = (span/plan.MaxPromQLPoints + time.Millisecond).Truncate(time.Millisecond)
	}
	base := plan.FillPorts(p.URL, r.ports)
	waitScraped(ctx, r.sc.Reach, base, last, p.Wait.D())
	for _, q := range p.Queries {
		qctx, cancel := context.WithTimeout(ctx, promQLTimeout)
		// One point before the first phase: the counters' values when a
		// window at the run's start opens.
		data := queryRange(qctx, r.sc.Reach, base, q, first.Add(-step), last.Add(step), step)
		cancel()
		r.event(timeline.Event{Kind: timeline.PromQL, Message: q, Data: data})
	}
}

// promQLTimeout bounds one query_range.
const promQLTimeout = 30 * time.Second

// waitScraped waits until every target of the server at base was last
// scraped at or after end (min(timestamp(up)) >= end), so that the points
// at the run's end hold what the service exported then, for at most wait.
// A server that does not answer is not waited for.
func waitScraped(ctx context.Context, allow *reach.Policy, base string, end time.Time, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		v, err := queryPrometheus(ctx, allow, base, "min(timestamp(up))", time.Now())
		if err == nil && v >= float64(end.UnixMilli())/1000 {
			return
		}
		if err != nil && !strings.Contains(err.Error(), "gave 0 series") {
			return // no server, or one that refuses: the queries will say so
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
