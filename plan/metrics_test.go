package plan

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMetricsProbe(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           string // an error, or "" for none
		names          []string
	}{
		{"metric form without an endpoint", "      - status == 200 for >= 99%", `      - increase(db_queries_total{kind="product"}) <= 0.05 * count`,
			`s.yaml:21:9: increase(...) reads the target's metrics, and the target has no metrics endpoint (add target.metrics: {path: /metrics}`, nil},
		{"path", "    args: []", "    args: []\n  metrics: {path: metrics}", `metrics path "metrics" is not a path`, nil},
		{"interval", "    args: []", "    args: []\n  metrics: {path: /metrics, interval: 1ms}", `metrics interval 1ms is too short`, nil},
		{"name", "    args: []", "    args: []\n  metrics: {path: /metrics, names: [\"db queries\"]}", `"db queries" is not a metric name`, nil},
		{"names from the contracts", "      - status == 200 for >= 99%",
			"      - increase(db_queries_total{kind=\"product\"}) <= 0.05 * count\n      - histogram_quantile(0.99, req_seconds) < 1s\n      - breaker(\"db\") never opens\n      - increase(db_queries_total) > 0",
			"", []string{"*circuit_breaker_state", "db_queries_total", "req_seconds_bucket"}},
		{"names given", "    args: []", "    args: []\n  metrics: {path: /metrics, names: [x_total, \"*_state\"]}", "", []string{"x_total", "*_state"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(good, tt.from, tt.to, 1)
			if tt.want == "" && !strings.Contains(src, "metrics:") {
				src = strings.Replace(src, "    args: []", "    args: []\n  metrics: {path: /metrics}", 1)
			}
			sc, err := Parse("s.yaml", []byte(src), Options{Catalog: demoCatalog.Catalog})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := sc.Target.Metrics
			if m.Interval.D() != 100*time.Millisecond || !slices.Equal(m.Names, tt.names) {
				t.Fatalf("metrics %+v, want interval 100ms and names %q", m, tt.names)
			}
		})
	}
}
