package plan

import (
	"strings"
	"testing"
	"time"
)

// promqlScenario has the prometheus: section PROMETHEUS and contracts
// reading two queries, one of them twice.
const promqlScenario = `name: promql
target:
  url: http://127.0.0.1:8080
PROMETHEUS
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: p
    duration: 1s
contracts:
  - name: few errors
    phase: p
    expect:
      - max(promql(` + "`sum(rate(errors_total[30s]))`" + `)) <= 0.5
      - last(promql(` + "`sum(rate(errors_total[30s]))`" + `)) <= 0.1
  - name: served
    expect:
      - increase(promql('sum(requests_total{code="200"})')) >= 0.9 * count
`

func TestPrometheusServer(t *testing.T) {
	parse := func(section string) (*Scenario, error) {
		return Parse("promql.yaml", []byte(strings.Replace(promqlScenario, "PROMETHEUS", section, 1)), Options{})
	}
	sc, err := parse("prometheus: {url: http://127.0.0.1:9090}")
	if err != nil {
		t.Fatal(err)
	}
	p := sc.Prometheus
	if p.Step.D() != time.Second || p.Wait.D() != 30*time.Second {
		t.Errorf("step %v, wait %v; want the defaults 1s and 30s", p.Step.D(), p.Wait.D())
	}
	if want := []string{`sum(rate(errors_total[30s]))`, `sum(requests_total{code="200"})`}; strings.Join(p.Queries, "|") != strings.Join(want, "|") {
		t.Errorf("queries %q, want %q (each once)", p.Queries, want)
	}
	if sc, err := parse(`prometheus: {url: "http://[::1]:9090", step: 250ms, wait: 5s}`); err != nil || sc.Prometheus.Step.D() != 250*time.Millisecond || sc.Prometheus.Wait.D() != 5*time.Second {
		t.Errorf("step and wait as written: %v", err)
	}
	withProm := "dependencies:\n  - name: prom\n    command: {argv: [prometheus, \"--web.listen-address=127.0.0.1:{port:prom}\"]}\nprometheus: {url: \"http://127.0.0.1:{port:prom}\"}"
	if _, err := parse(withProm); err != nil {
		t.Errorf("a server the scenario starts, on {port:prom}: %v", err)
	}
	for _, tt := range []struct{ section, want string }{
		{"", "promql.yaml:15:9: promql(sum(rate(errors_total[30s]))) needs a Prometheus server, and the scenario names none (add prometheus: {url: http://127.0.0.1:9090}"},
		{"prometheus: {url: 127.0.0.1:9090}", `promql.yaml:4:19: prometheus url "127.0.0.1:9090" is not an http(s) URL (write the server's base URL, such as http://127.0.0.1:9090)`},
		{"prometheus: {url: http://10.1.2.3:9090}", `promql.yaml:4:19: prometheus url "10.1.2.3" is not a loopback address (reach it through loopback (a port forward), or add allow_hosts: [10.1.2.3]`},
		{"prometheus: {url: http://prom.internal:9090}", `promql.yaml:4:19: prometheus url`},
		{`prometheus: {url: "http://127.0.0.1:{port:prom}"}`, `promql.yaml:4:19: prometheus url: {port:prom} names no dependency of the scenario (name the port of a dependency`},
		{"prometheus: {url: http://127.0.0.1:9090, step: 1ms}", `promql.yaml:4:48: prometheus step 1ms is too short (ask for a point at most every 10ms)`},
		{"prometheus: {url: http://127.0.0.1:9090, wait: -1s}", `promql.yaml:4:48: duration "-1s" is negative`},
		{"prometheus: {url: http://127.0.0.1:9090, steps: 1s}", `promql.yaml:4:42: unknown field "steps"`},
	} {
		_, err := parse(tt.section)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q:\n got %v\nwant %s", tt.section, err, tt.want)
		}
	}
	// A promql form that does not parse is refused at its position.
	bad := strings.Replace(strings.Replace(promqlScenario, "PROMETHEUS", "prometheus: {url: http://127.0.0.1:9090}", 1), "max(promql(", "p99(promql(", 1)
	if _, err := Parse("promql.yaml", []byte(bad), Options{}); err == nil || !strings.Contains(err.Error(), "promql.yaml:15:13: promql(...) must be read through increase, rate, max, min, avg or last") {
		t.Errorf("p99(promql(...)): %v", err)
	}
}
