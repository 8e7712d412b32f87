package plan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/suggest"
)

// Probe is a figure chaoskit reads from a dependency or the target, as
// evidence for contracts (probe("NAME") in an expectation): an SQL query
// against a Postgres dependency (the first column of its first row), a
// Redis command against a Redis dependency (its reply), an HTTP GET of
// the target or of a command dependency's own endpoint (Value of its
// answer), or a PromQL query against a Prometheus
// server (the one sample of an instant query at the reading's time: fleet
// metrics, recording rules, burn rates). Each reading must be a number; one
// that cannot be made or is not a number is recorded as unknown, and an
// expectation resting on it is inconclusive, never passed.
type Probe struct {
	// Name is what contracts call it: probe("clicks").
	Name string `yaml:"name"`
	// Postgres and SQL, Redis and Command, or HTTP (such as "GET
	// /stats"), Headers and Value ({json.PATH} or {header.NAME}).
	Postgres string            `yaml:"postgres"`
	SQL      string            `yaml:"sql"`
	Redis    string            `yaml:"redis"`
	Command  []string          `yaml:"command"`
	HTTP     string            `yaml:"http"`
	Headers  map[string]string `yaml:"headers"`
	Value    string            `yaml:"value"`
	// Dependency, with HTTP, sends the GET to a command dependency the
	// scenario starts (http://127.0.0.1:{port:NAME}) instead of the
	// target: the dependency's own word about itself, such as an
	// upstream's count of the requests it answered, which the target
	// cannot misreport.
	Dependency string `yaml:"dependency"`
	// Prometheus is the base URL of a Prometheus server (on loopback,
	// such as http://127.0.0.1:9090, or on a host of allow_hosts) and
	// Query the PromQL it evaluates at each reading (/api/v1/query): its
	// result must be one sample. A server that does not answer, an error,
	// or a result of no sample or of several is an unknown reading.
	Prometheus string `yaml:"prometheus"`
	Query      string `yaml:"query"`
	// Interval, when set, reads the probe that often during the phases
	// too; Timeout bounds one reading (default 2s). A probe that an
	// increase(probe(...)) reads is read during the phases whatever it
	// says: every DefaultProbeEvery when it gives no interval.
	Interval Duration `yaml:"interval"`
	Timeout  Duration `yaml:"timeout"`

	// After is how long the probe is read after the last phase, filled in
	// by validation: the longest `within` of the expectations that read
	// it (a probe is read at least once after the last phase).
	After time.Duration `yaml:"-"`
}

// Defaults of probes.
const (
	DefaultProbeTimeout = 2 * time.Second
	// DefaultProbeEvery is how often a probe is read after the last
	// phase, and during the phases when it gives no interval.
	DefaultProbeEvery = 250 * time.Millisecond
	// MinProbeInterval bounds how often a probe may be read.
	MinProbeInterval = 10 * time.Millisecond
)

// Step returns the probe as the setup step that reads it once: the same
// dependencies, the same ways of reading them.
func (p *Probe) Step() *SetupStep {
	s := &SetupStep{Name: p.Name, Postgres: p.Postgres, Redis: p.Redis, Command: p.Command, HTTP: p.HTTP, Headers: p.Headers, Timeout: p.Timeout}
	if p.SQL != "" {
		s.SQL = p.SQL
		s.Scripts = []SQLScript{{Text: p.SQL, Inline: true}}
	}
	if s.Timeout == 0 {
		s.Timeout = Duration(DefaultProbeTimeout)
	}
	return s
}

// Every is how often the probe is read after the last phase.
func (p *Probe) Every() time.Duration {
	if p.Interval > 0 {
		return p.Interval.D()
	}
	return DefaultProbeEvery
}

// validateProbes checks the probes, and the probes the contracts read;
// it fills in each probe's After.
func (v *validator) validateProbes(made map[string]bool) {
	sc := v.sc
	deps := map[string]*Dependency{}
	var pgNames, depNames []string
	for i := range sc.Dependencies {
		d := &sc.Dependencies[i]
		deps[d.Name] = d
		depNames = append(depNames, d.Name)
		if d.Postgres != nil {
			pgNames = append(pgNames, d.Name)
		}
	}
	byName := map[string]*Probe{}
	for i := range sc.Probes {
		p := &sc.Probes[i]
		at := fmt.Sprintf("$.probes[%d]", i)
		switch {
		case !captureName.MatchString(p.Name):
			v.errorf(at+".name", "letters, digits and _, such as clicks", "probe name %q cannot be used", p.Name)
			continue
		case byName[p.Name] != nil:
			v.errorf(at+".name", "give each probe its own name", "probe %q is declared twice", p.Name)
			continue
		}
		byName[p.Name] = p
		s := p.Step()
		kinds := 0
		for _, set := range []bool{p.Postgres != "", p.Redis != "", p.HTTP != "", p.Prometheus != ""} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			v.errorf(at, "write postgres: DEPENDENCY with sql, redis: DEPENDENCY with command, http: \"GET /path\" with value, or prometheus: URL with query", "probe %q needs exactly one of postgres, redis, http or prometheus", p.Name)
			continue
		}
		if p.Prometheus != "" || p.Query != "" {
			v.validatePrometheusProbe(at, p)
			continue
		}
		if p.Dependency != "" {
			v.validateProbeDependency(at, p, deps)
		}
		v.checkCaptureRefs(at, made, p.SQL, p.HTTP)
		v.checkCaptureRefs(at+".command", made, p.Command...)
		switch s.Kind() {
		case StepSQL:
			v.validateSQLStep(at, s, deps, pgNames)
		case StepRedis:
			v.validateRedisStep(at, s, deps, depNames)
		default:
			v.validateHTTPStep(at, s)
			if m, _, _ := strings.Cut(strings.TrimSpace(p.HTTP), " "); !strings.EqualFold(m, "GET") {
				v.errorf(at+".http", "a probe reads: write GET /path", "probe %q sends %s; a probe must not change what it reads", p.Name, m)
			}
			refs := captureSource.FindAllStringSubmatch(p.Value, -1)
			ok := len(refs) == 1 && refs[0][0] == strings.TrimSpace(p.Value) && (refs[0][1] == "json" || refs[0][1] == "header")
			if !ok {
				v.errorf(at+".value", "write value: \"{json.count}\" or value: \"{header.X-Count}\"", "probe %q needs value: where in the answer its number is", p.Name)
			}
		}
		if p.Value != "" && s.Kind() != StepHTTP {
			v.errorf(at+".value", "an SQL probe reads the first column of the first row, a Redis probe the reply: remove value", "probe %q: value is for http probes", p.Name)
		}
		if p.Interval > 0 && p.Interval.D() < MinProbeInterval {
			v.errorf(at+".interval", fmt.Sprintf("read it at most every %v", MinProbeInterval), "probe %q: interval %v is too short", p.Name, p.Interval.D())
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, c := range sc.Contracts {
		for j, e := range c.Expect {
			for _, n := range contract.ProbeNames(e) {
				p := byName[n]
				if p == nil {
					hint := "declare it: probes: [{name: " + n + ", postgres: db, sql: \"SELECT count(*) FROM ...\"}]"
					if h := suggest.Hint(n, names); h != "" {
						hint = h
					}
					v.errorf(fmt.Sprintf("$.contracts[%d].expect[%d]", i, j), hint, "probe(%q) reads a probe the scenario does not declare", n)
					continue
				}
				p.After = max(p.After, contract.ProbeWithin(e))
				if contract.ProbeDuringPhases(e) && p.Interval <= 0 {
					// Its readings must bracket the window's edges.
					p.Interval = Duration(DefaultProbeEvery)
				}
			}
		}
	}
}

// validateProbeDependency checks the dependency an http probe is sent
// to: one the scenario starts from a command, whose port chaoskit chose.
func (v *validator) validateProbeDependency(at string, p *Probe, deps map[string]*Dependency) {
	d := deps[p.Dependency]
	var depNames []string // the command dependencies, an http probe's choice
	for _, dep := range v.sc.Dependencies {
		if dep.Command != nil {
			depNames = append(depNames, dep.Name)
		}
	}
	switch {
	case p.HTTP == "":
		v.errorf(at+".dependency", "a postgres or redis probe names its dependency in postgres: or redis:; dependency: goes with http: GET /path", "probe %q: dependency is for http probes", p.Name)
	case d == nil:
		hint := "declare it: dependencies: [{name: " + p.Dependency + ", command: {argv: [...]}}], or name one of: " + strings.Join(depNames, ", ")
		if len(depNames) == 0 {
			hint = "declare it: dependencies: [{name: " + p.Dependency + ", command: {argv: [...]}}]; without dependency: the probe reads the target"
		} else if h := suggest.Hint(p.Dependency, depNames); h != "" {
			hint = h
		}
		v.errorf(at+".dependency", hint, "probe %q: no dependency named %q", p.Name, p.Dependency)
	case d.Command == nil:
		v.errorf(at+".dependency", "read a Postgres dependency with postgres: "+p.Dependency+" and sql:", "probe %q: dependency %q is a Postgres server, not an HTTP one", p.Name, p.Dependency)
	}
}

// validatePrometheusProbe checks a probe read from a Prometheus server.
func (v *validator) validatePrometheusProbe(at string, p *Probe) {
	if p.Prometheus == "" {
		v.errorf(at+".query", "add prometheus: http://127.0.0.1:9090, the server that evaluates it", "probe %q: query is for prometheus probes", p.Name)
		return
	}
	v.checkPrometheusURL(at+".prometheus", fmt.Sprintf("probe %q: prometheus", p.Name), p.Prometheus)
	if strings.TrimSpace(p.Query) == "" {
		v.errorf(at+".query", `write the PromQL to evaluate, such as query: 'sum(rate(http_requests_total{code=~"5.."}[30s]))'`, "probe %q needs a query", p.Name)
	}
	if p.SQL != "" || len(p.Command) > 0 || p.Value != "" || len(p.Headers) > 0 || p.Dependency != "" {
		v.errorf(at, "a prometheus probe is its query's one sample: remove sql, command, value, headers and dependency", "probe %q mixes prometheus with another source's fields", p.Name)
	}
	if p.Interval > 0 && p.Interval.D() < MinProbeInterval {
		v.errorf(at+".interval", fmt.Sprintf("read it at most every %v", MinProbeInterval), "probe %q: interval %v is too short", p.Name, p.Interval.D())
	}
}
