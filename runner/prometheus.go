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
)

// prometheusClient reads Prometheus servers over loopback only, as every
// request chaoskit makes.
var prometheusClient = &http.Client{Transport: &http.Transport{
	DialContext:       dialLoopback(&net.Dialer{Control: loopbackOnly}),
	DisableKeepAlives: true,
}}

// maxPrometheusAnswer bounds the answer read: one sample is a few hundred
// bytes; a query that selects thousands of series is refused below anyway.
const maxPrometheusAnswer = 1 << 20

// queryPrometheus evaluates query on the Prometheus server at base at time
// at (GET /api/v1/query) and returns its one sample. No sample, several, an
// error of the server's or no answer is an error: the reading is unknown.
func queryPrometheus(ctx context.Context, base, query string, at time.Time) (float64, error) {
	u := strings.TrimSuffix(base, "/") + "/api/v1/query?" + url.Values{
		"query": {query},
		"time":  {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)},
	}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := prometheusClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("prometheus: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPrometheusAnswer))
	if err != nil {
		return 0, fmt.Errorf("prometheus: %v", err)
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
		return 0, fmt.Errorf("prometheus answered %s, not its API's JSON: %q", resp.Status, shortBody(body))
	}
	if ans.Status != "success" {
		return 0, fmt.Errorf("prometheus: %s: %s", ans.ErrorType, ans.Error)
	}
	var sample []any
	switch ans.Data.ResultType {
	case "scalar":
		if err := json.Unmarshal(ans.Data.Result, &sample); err != nil {
			return 0, fmt.Errorf("prometheus: a scalar result that does not read: %v", err)
		}
	case "vector":
		var series []struct {
			Value []any `json:"value"`
		}
		if err := json.Unmarshal(ans.Data.Result, &series); err != nil {
			return 0, fmt.Errorf("prometheus: a vector result that does not read: %v", err)
		}
		if len(series) != 1 {
			return 0, fmt.Errorf("prometheus: %q gave %d series, want one (aggregate it: sum(...))", query, len(series))
		}
		sample = series[0].Value
	default:
		return 0, fmt.Errorf("prometheus: %q gave a %s, want one sample (an instant vector of one series, or a scalar)", query, ans.Data.ResultType)
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
