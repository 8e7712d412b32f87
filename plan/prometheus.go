package plan

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// PrometheusServer is a Prometheus server the contracts ask in PromQL
// (max(promql(`QUERY`)) <= BOUND and the other promql forms): fleet
// metrics, recording rules, burn rates. After the last phase chaoskit asks
// it each query of the contracts once, over the whole run
// (/api/v1/query_range, one point every Step), and records the answers on
// the timeline, where the judge reads them; the judge never calls it.
type PrometheusServer struct {
	// URL is the server's base URL, on loopback as all of chaoskit's
	// traffic: http://127.0.0.1:9090, or http://127.0.0.1:{port:NAME} for
	// a server the scenario starts as a dependency.
	URL string `yaml:"url"`
	// Step is the time between two points of a query's answer; default 1s.
	// It is raised for a run so long that a series would have more than
	// MaxPromQLPoints points. A figure can be no finer than the server's
	// scrape interval, whatever the step.
	Step Duration `yaml:"step"`
	// Wait bounds how long chaoskit waits after the last phase for the
	// server to have scraped the run's end (every target's last scrape,
	// min(timestamp(up)), at or after it) before it asks; default 30s.
	Wait Duration `yaml:"wait"`

	// Queries are the contracts' queries, each once, filled in by
	// validation.
	Queries []string `yaml:"-"`
}

// Defaults and bounds of prometheus:.
const (
	DefaultPromQLStep = time.Second
	DefaultPromQLWait = 30 * time.Second
	// MaxPromQLPoints is the most points a query's answer may have per
	// series; Prometheus refuses more than 11,000.
	MaxPromQLPoints = 10000
	minPromQLStep   = 10 * time.Millisecond
)

// checkPrometheusURL refuses a Prometheus server URL that is not http(s)
// on loopback or a host allowed by consent; what names it in the message.
func (v *validator) checkPrometheusURL(path, what, raw string) {
	// {port:NAME} of a dependency chaoskit starts (a Prometheus server of
	// the scenario's own) is filled when the run has chosen the ports.
	declared := map[string]bool{"": v.sc.Target.Command != nil}
	for _, d := range v.sc.Dependencies {
		declared[d.Name] = true
	}
	for _, m := range portRef.FindAllStringSubmatch(raw, -1) {
		if !declared[m[1]] {
			v.errorf(path, "name the port of a dependency the scenario starts, such as {port:prom}, or write the server's own port", "%s: %s names no dependency of the scenario", what, m[0])
			return
		}
	}
	raw = fillAny(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.errorf(path, "write the server's base URL, such as http://127.0.0.1:9090", "%s %q is not an http(s) URL", what, raw)
	default:
		v.checkReach(path, what, raw)
	}
}

// validatePrometheus checks prometheus: and the contracts' promql forms:
// a form needs a server, and a server is asked the forms' queries.
func (v *validator) validatePrometheus() {
	p := v.sc.Prometheus
	if p != nil {
		v.checkPrometheusURL("$.prometheus.url", "prometheus url", p.URL)
		switch {
		case p.Step == 0:
			p.Step = Duration(DefaultPromQLStep)
		case p.Step.D() < minPromQLStep:
			v.errorf("$.prometheus.step", fmt.Sprintf("ask for a point at most every %v", minPromQLStep), "prometheus step %v is too short", p.Step.D())
		}
		if p.Wait == 0 {
			p.Wait = Duration(DefaultPromQLWait)
		}
		p.Queries = nil
	}
	seen := map[string]bool{}
	for i, c := range v.sc.Contracts {
		for j, e := range c.Expect {
			q, ok := contract.PromQLQuery(e)
			if !ok {
				continue
			}
			if p == nil {
				v.errorf(fmt.Sprintf("$.contracts[%d].expect[%d]", i, j), "add prometheus: {url: http://127.0.0.1:9090}, the server that evaluates it", "promql(%s) needs a Prometheus server, and the scenario names none", strings.TrimSpace(q))
				continue
			}
			if !seen[q] {
				seen[q] = true
				p.Queries = append(p.Queries, q)
			}
		}
	}
}
