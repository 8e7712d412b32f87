package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// defaultMetricsInterval is how often target.metrics is sampled when the
// scenario does not say.
const defaultMetricsInterval = 100 * time.Millisecond

// validateMetricsProbe checks target.metrics and fills in its default
// interval.
func (v *validator) validateMetricsProbe(m *MetricsProbe) {
	if m == nil {
		return
	}
	if !strings.HasPrefix(m.Path, "/") {
		v.errorf("$.target.metrics.path", "write a path such as /metrics", "metrics path %q is not a path", m.Path)
	}
	switch {
	case m.Interval == 0:
		m.Interval = Duration(defaultMetricsInterval)
	case m.Interval.D() < 10*time.Millisecond:
		v.errorf("$.target.metrics.interval", "sample at most every 10ms", "metrics interval %v is too short", m.Interval.D())
	}
	for i, n := range m.Names {
		if strings.TrimLeft(strings.TrimPrefix(n, "*"), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:") != "" || n == "" || n == "*" {
			v.errorf(fmt.Sprintf("$.target.metrics.names[%d]", i), "write a metric family name such as http_requests_total, or *SUFFIX for every name ending so", "%q is not a metric name", n)
		}
	}
}

// metricNames refuses a contract that reads metrics from a target with no
// metrics endpoint, and, when target.metrics names no families, records
// the ones the contracts read.
func (v *validator) metricNames() {
	m := v.sc.Target.Metrics
	var names []string
	for i, c := range v.sc.Contracts {
		for j, e := range c.Expect {
			ns := contract.MetricNames(e)
			names = append(names, ns...)
			if m == nil && len(ns) > 0 && !strings.HasPrefix(ns[0], "*") {
				v.errorf(fmt.Sprintf("$.contracts[%d].expect[%d]", i, j), "add target.metrics: {path: /metrics}, the service's Prometheus endpoint", "%s(...) reads the target's metrics, and the target has no metrics endpoint", strings.TrimSpace(strings.SplitN(e, "(", 2)[0]))
			}
		}
	}
	if m != nil && len(m.Names) == 0 {
		slices.Sort(names)
		m.Names = slices.Compact(names)
	}
}
