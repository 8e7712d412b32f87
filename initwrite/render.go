package initwrite

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/initscan"
)

// perRoute is the least rate each loaded route gets; MinSamples the
// requests a contract's window needs (contracts' default min_samples).
const (
	perRoute   = 40
	MinSamples = 50
)

// Rate is the load's rate: for each route, half as much again as puts
// MinSamples requests in the shortest contract window (a phase less its
// settle time), at least perRoute; in all between 50/s and 600/s.
func (d *Draft) Rate() int {
	window := (d.Opts.Phase - max(FaultSettle, RecoveryBound)).Seconds()
	per := perRoute
	if window > 0 {
		per = max(per, int(math.Ceil(1.5*MinSamples/window)))
	}
	return min(max(per*len(d.Routes), 50), 600)
}

// Only restricts a rendering: the baseline phase alone, and the routes
// given (nil: all).
type Only struct {
	Name   string
	Routes []*LoadRoute
	Phase  time.Duration
}

// YAML renders the scenario, with its comments.
func (d *Draft) YAML() []byte { return d.render(nil) }

func q(s string) string { return strconv.Quote(s) }

func list(items []string) string {
	qs := make([]string, len(items))
	for i, s := range items {
		qs[i] = q(s)
	}
	return "[" + strings.Join(qs, ", ") + "]"
}

func (d *Draft) render(only *Only) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	svc := d.Svc
	if only == nil {
		d.head(w)
	}
	name := d.Name
	if only != nil && only.Name != "" {
		name = only.Name
	}
	w("name: %s", q(name))
	w("description: %s", q(fmt.Sprintf("%s under faults of its dependencies, as chaoskit init wrote it from the source of %s.", svc.Name, svc.Package)))
	if len(d.Vars) > 0 {
		w("vars:")
		for _, v := range d.Vars {
			w("  %s: %s", v[0], q(v[1]))
		}
	}
	w("target:")
	w("  command:")
	w("    argv: %s", list(d.Argv))
	if len(d.Env) > 0 {
		w("    env:")
		for _, e := range d.Env {
			w("      %s: %s", e[0], q(e[1]))
		}
	}
	w("  url: %s", q(d.URL))
	w("  ready: {path: %s, timeout: 30s}", q(d.Ready))
	if len(d.Deps) > 0 {
		w("dependencies:")
		for _, m := range d.Deps {
			w("  - name: %s  # %s", m.Name, m.Dep.Pos)
			switch m.Dep.Kind {
			case initscan.Postgres:
				w("    postgres: {}")
			case initscan.Redis:
				w("    command:")
				w("      argv: %s", list([]string{"redis-server", "--port", "{port:" + m.Name + "}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}))
			}
		}
		w("proxies:")
		for _, m := range d.Deps {
			w("  - name: %s", m.Proxy)
			w("    upstream: %s", q("127.0.0.1:{port:"+m.Name+"}"))
		}
	}
	w("load:")
	w("  rate: %d/s", d.Rate())
	w("  timeout: 1s")
	w("  requests:")
	routes := d.Routes
	if only != nil && only.Routes != nil {
		routes = only.Routes
	}
	if len(routes) == 0 {
		w("    - path: %s", q(d.Ready))
	}
	for _, lr := range routes {
		w("    - path: %s  # %s %s", q(lr.Path), lr.Route.Router, lr.Route.Pos)
		w("      tags: [%s]", lr.Tag)
	}
	w("phases:")
	phase := d.Opts.Phase
	if only != nil && only.Phase > 0 {
		phase = only.Phase
	}
	w("  - name: %s", baselinePhase)
	w("    duration: %s", phase)
	if only != nil {
		return []byte(b.String())
	}
	for _, f := range d.Faults() {
		w("  - name: %s", f.Phase)
		w("    duration: %s", phase)
		w("    faults:")
		switch f.Kind {
		case "latency":
			w("      - {proxy: %s, action: latency, latency: %s}", f.Dep.Proxy, d.Opts.Latency)
		case "down":
			w("      - {proxy: %s, action: down}", f.Dep.Proxy)
		case "restart":
			w("      - {process: %s, action: restart}", f.Dep.Name)
		}
		w("  - name: %s", f.After)
		w("    duration: %s", phase)
	}
	d.contracts(w)
	return []byte(b.String())
}

func (d *Draft) head(w func(string, ...any)) {
	svc := d.Svc
	w("# Written by `chaoskit init` from the Go source of %s (package %s).", svc.Module, svc.Package)
	w("# Nothing of the service was run to write it; read it, change what you know")
	w("# better, and keep it. Lines of the service are relative to %s.", "its module")
	w("#")
	w("# Routes (%d):", len(svc.Routes))
	for _, r := range svc.Routes {
		w("#   %-40s %-12s %s", r.Key(), r.Router, r.Pos)
	}
	w("# Dependencies (%d):", len(svc.Deps))
	for _, dep := range svc.Deps {
		client := dep.Client
		if dep.Driver != "" {
			client += ", driver " + dep.Driver
		}
		w("#   %-10s %-30s at %s, its address from %s", dep.Kind, "("+client+")", dep.Pos, dep.Origin)
	}
	if l := svc.Listen; l != nil {
		w("# Listens: %s at %s, its address from %s", l.Call, l.Pos, l.Origin)
	}
	if h := svc.Health; h != nil {
		w("# Health route: %s (%s)", h.Key(), h.Pos)
	}
	w("# Failpoint markers (%d):", len(svc.Points))
	for _, p := range svc.Points {
		w("#   %s  %s:%d", p.Path, p.File, p.Line)
	}
	w("# Resilience calls (%d):", len(svc.Resilience))
	for _, c := range svc.Resilience {
		w("#   %-40s %s", c.Func, c.Pos)
	}
	if len(d.Notes) > 0 || len(d.Vars) > 0 || len(d.Discovered) > 0 {
		w("#")
		w("# Guesses, and what init could not infer:")
		for _, n := range d.Notes {
			w("#   - %s", n)
		}
		for _, lr := range d.Routes {
			for _, p := range lr.Missing {
				w("#   - %s: no example value for {%s} of GET %s; the load sends the var %s, a placeholder: give a real one with --var %s=VALUE",
					lr.Route.Pos, p, lr.Route.Path, varName(lr.Route.Path, p), varName(lr.Route.Path, p))
			}
		}
		for _, s := range d.Discovered {
			w("#   - %s", s)
		}
	}
	if pts := d.pointNames(); len(pts) > 0 {
		w("#")
		w("# The failpoint markers above can be faulted too: build the service with")
		w("# `chaoskit build`, add `source:` to the target and a phase such as")
		w("#   faults: [{point: %s, action: error}]", pts[0])
	}
	w("")
}

// Points are the service's failpoints as a scenario names them.
func (d *Draft) pointNames() []string {
	var out []string
	for _, p := range d.Svc.Points {
		out = append(out, p.Path)
	}
	return out
}

func (d *Draft) contracts(w func(string, ...any)) {
	if d.Measured == nil {
		w("# No contracts yet: `chaoskit init --baseline` runs the baseline phase first and")
		w("# proposes contracts from what it measures.")
		return
	}
	w("# Contracts proposed by `chaoskit init --baseline` from its baseline run")
	w("# (%s, run directory %s): robust bands around what", d.Measured.When.UTC().Format(time.RFC3339), d.Measured.RunDir)
	w("# the baseline measured, none of which the baseline itself fails. Error share:")
	w("# at most the baseline's + %s while a fault is on (after %s) and after it", pct(errorSlack), FaultSettle)
	w("# (after %s); p99 after a fault: below max(%d x baseline, baseline + %s);", RecoveryBound, LatencyFactor, LatencySlack)
	w("# time to recover: below %s. They are proposals: keep those you mean.", RecoveryBound)
	for _, s := range d.Dropped {
		w("# Not proposed: %s", s)
	}
	if len(d.Proposals) == 0 {
		w("# (none: the baseline measured no route)")
		return
	}
	w("contracts:")
	for _, p := range d.Proposals {
		w("  - name: %s", q(p.Name))
		w("    phase: %s", p.Phase)
		if p.Settle > 0 {
			w("    settle: %s", p.Settle)
		}
		if p.Tag != "" {
			w("    requests: {tag: %s}", p.Tag)
		}
		w("    expect:  # %s", p.Measured)
		for _, e := range p.Expect {
			w("      - %s", e)
		}
	}
}
