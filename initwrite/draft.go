// Package initwrite writes the scenario `chaoskit init` proposes for a
// service initscan has read: the dependencies it recognised started by
// chaoskit with proxies in front, the service started with its flags and
// environment wired to them, load over the GET routes it can fill, one
// phase per dependency fault, and, after a baseline run (Baseline),
// contracts proposed from what that run measured. Everything it guessed
// or could not fill is a comment in the file, with the service's line.
//
// All that it runs goes through harness (harness.go in this package).
package initwrite

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/initscan"
)

// Options shape the scenario.
type Options struct {
	// Binary is the service's executable as the scenario's argv names it,
	// relative to the scenario's directory (./bin/NAME).
	Binary string
	// Phase is each phase's length; default 3s.
	Phase time.Duration
	// Latency is the latency fault's delay; default 300ms.
	Latency time.Duration
}

func (o *Options) defaults() {
	if o.Phase <= 0 {
		o.Phase = 3 * time.Second
	}
	if o.Latency <= 0 {
		o.Latency = 300 * time.Millisecond
	}
}

// Draft is a scenario being written.
type Draft struct {
	Svc  *initscan.Service
	Opts Options
	Name string

	Deps   []*Managed
	Argv   []string
	Env    [][2]string
	URL    string
	Ready  string
	Routes []*LoadRoute
	Vars   [][2]string
	// Notes are comments for the file's head: what was guessed or could
	// not be filled, each with the service's line where there is one.
	Notes []string
	// Measured and Proposals are set by a baseline run.
	Measured  *Measurement
	Proposals []*Proposal
	Dropped   []string
	// Discovered notes where path values came from.
	Discovered []string
}

// Managed is a dependency the scenario starts, with its proxy.
type Managed struct {
	Dep   initscan.Dependency
	Name  string // the dependency's name in the scenario
	Proxy string // its proxy's name
	Value string // what the service is given
}

// LoadRoute is a route in the load.
type LoadRoute struct {
	Route initscan.Route
	// Path is the path the load sends, with templates or ${vars}.
	Path string
	Tag  string
	// Listing is the route whose answer holds example values for the
	// path parameters, when there is one.
	Listing *LoadRoute
	// Missing names the parameters still without example values.
	Missing []string
}

// New drafts the scenario for svc.
func New(svc *initscan.Service, opts Options) *Draft {
	opts.defaults()
	d := &Draft{Svc: svc, Opts: opts, Name: svc.Name + "-init"}
	if opts.Binary == "" {
		d.Opts.Binary = "./bin/" + svc.Name
	}
	d.Argv = []string{d.Opts.Binary}
	if !svc.Main {
		d.note(initscan.Pos{}, "%s is not a main package: the scenario runs %s, which you build from the service's main package", svc.Package, d.Opts.Binary)
	}
	d.listen()
	d.dependencies()
	d.routes()
	for _, n := range svc.Notes {
		d.Notes = append(d.Notes, n.String())
	}
	return d
}

func (d *Draft) note(p initscan.Pos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.File != "" {
		msg = p.String() + ": " + msg
	}
	d.Notes = append(d.Notes, msg)
}

// set gives the service a setting from where it reads it.
func (d *Draft) set(o *initscan.Origin, value string) {
	switch o.Kind {
	case "flag":
		d.Argv = append(d.Argv, "--"+o.Name, value)
	case "env":
		d.Env = append(d.Env, [2]string{o.Name, value})
	}
}

func (d *Draft) listen() {
	l := d.Svc.Listen
	d.URL = "http://127.0.0.1:{port}"
	switch {
	case l == nil:
		d.URL = "http://127.0.0.1:8080"
		d.note(initscan.Pos{}, "guess: the service listens on 127.0.0.1:8080 (no listening call found)")
	case l.Origin.Configurable():
		v := "127.0.0.1:{port}"
		if l.Form == "port" {
			v = "{port}"
		}
		d.set(l.Origin, v)
	default:
		addr := "127.0.0.1:8080"
		if l.Origin != nil && l.Origin.Value != "" {
			host, port, ok := strings.Cut(l.Origin.Value, ":")
			if ok && (host == "" || host == "127.0.0.1" || host == "localhost" || host == "0.0.0.0") {
				addr = "127.0.0.1:" + port
			}
		}
		d.URL = "http://" + addr
		d.note(l.Pos, "guess: the service listens on %s (%s takes no flag or environment variable)", addr, l.Call)
	}
	d.Ready = "/healthz"
	if h := d.Svc.Health; h != nil {
		d.Ready = h.Path
		return
	}
	for _, r := range d.Svc.Routes {
		if r.Readable() && len(r.Params) == 0 {
			d.Ready = r.Path
			d.note(r.Pos, "guess: no health route, so readiness waits for GET %s to answer 200", r.Path)
			return
		}
	}
	d.note(initscan.Pos{}, "guess: no health route and no GET route without parameters; readiness waits for GET /healthz")
}

func (d *Draft) dependencies() {
	count := map[string]int{}
	for _, dep := range d.Svc.Deps {
		switch {
		case !dep.Origin.Configurable():
			continue // the scan's notes say why
		case dep.Kind != initscan.Postgres && dep.Kind != initscan.Redis:
			d.note(dep.Pos, "%s dependency (%s) set by %s: not started by this scenario (init starts PostgreSQL and Redis), so the service keeps its default",
				dep.Kind, dep.Client, dep.Origin)
			continue
		}
		count[dep.Kind]++
		m := &Managed{Dep: dep, Name: dep.Kind}
		if count[dep.Kind] > 1 {
			m.Name = fmt.Sprintf("%s-%d", dep.Kind, count[dep.Kind])
		}
		m.Proxy = m.Name + "-proxy"
		switch {
		case dep.Kind == initscan.Postgres && dep.Form == "dsn":
			m.Value = "postgres://postgres@127.0.0.1:{port:" + m.Proxy + "}/postgres?sslmode=disable"
			// The managed server asks for the run's password; libpq and
			// pgx read it from PGPASSWORD, kept out of the command line.
			d.Env = append(d.Env, [2]string{"PGPASSWORD", "{password:" + m.Name + "}"})
		case dep.Kind == initscan.Redis && dep.Form == "url":
			m.Value = "redis://127.0.0.1:{port:" + m.Proxy + "}/0"
		default:
			m.Value = "127.0.0.1:{port:" + m.Proxy + "}"
		}
		d.set(dep.Origin, m.Value)
		d.Deps = append(d.Deps, m)
	}
}

// operational paths are left out of the load: they say how the service
// is, not what it serves.
var operational = regexp.MustCompile(`^/(metrics|debug/|favicon\.ico)`)

func (d *Draft) routes() {
	var reads []*LoadRoute
	for _, r := range d.Svc.Routes {
		switch {
		case d.Svc.Health != nil && r.Key() == d.Svc.Health.Key():
			continue
		case !r.Readable():
			d.note(r.Pos, "%s is not in the load: init sends only GET (a write needs a body you choose)", r.Key())
			continue
		case operational.MatchString(r.Path):
			d.note(r.Pos, "GET %s is not in the load: an operational endpoint", r.Path)
			continue
		}
		lr := &LoadRoute{Route: r, Path: r.Path, Tag: tagOf(r.Path), Missing: slices.Clone(r.Params)}
		reads = append(reads, lr)
	}
	for _, lr := range reads {
		if len(lr.Route.Params) == 0 {
			continue
		}
		// The listing of /items/{id} is /items: the longest route
		// without parameters above the first parameter.
		above := lr.Route.Path[:strings.Index(lr.Route.Path, "{")]
		for _, o := range reads {
			if len(o.Route.Params) == 0 && strings.HasPrefix(above, strings.TrimSuffix(o.Route.Path, "/")+"/") &&
				(lr.Listing == nil || len(o.Route.Path) > len(lr.Listing.Route.Path)) {
				lr.Listing = o
			}
		}
	}
	d.Routes = reads
	if len(reads) == 0 {
		d.note(initscan.Pos{}, "no GET route to load: the load sends GET %s, the readiness path", d.Ready)
	}
}

// tagOf names a route for the contracts' request filters: its path in
// words, "items-id" for /items/{id}.
func tagOf(p string) string {
	var parts []string
	for _, seg := range strings.Split(p, "/") {
		seg = strings.Trim(seg, "{}.")
		seg = strings.ToLower(nonWord.ReplaceAllString(seg, "-"))
		if seg = strings.Trim(seg, "-"); seg != "" {
			parts = append(parts, seg)
		}
	}
	if len(parts) == 0 {
		return "root"
	}
	return strings.Join(parts, "-")
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// Fill sets each route's path from example values per parameter (nil or
// empty: none found) and names a var for each parameter still missing.
func (d *Draft) Fill(values map[*LoadRoute]map[string][]string) {
	d.Vars = nil
	seen := map[string]bool{}
	for _, lr := range d.Routes {
		p, missing := lr.Route.Path, []string(nil)
		for _, name := range lr.Route.Params {
			token := "{" + name + "}"
			if !strings.Contains(p, token) {
				token = "{" + name + "...}"
			}
			vals := values[lr][name]
			switch {
			case len(vals) == 1:
				p = strings.Replace(p, token, vals[0], 1)
			case len(vals) > 1:
				p = strings.Replace(p, token, "{"+strings.Join(vals, "|")+"}", 1)
			default:
				v := varName(lr.Route.Path, name)
				p = strings.Replace(p, token, "${"+v+"}", 1)
				missing = append(missing, name)
				if !seen[v] {
					seen[v] = true
					d.Vars = append(d.Vars, [2]string{v, placeholder(lr.Route, name)})
				}
			}
		}
		lr.Path, lr.Missing = p, missing
	}
}

// varName names the var of a path parameter after the segment before it:
// items_id for /items/{id}.
func varName(p, param string) string {
	before := p[:strings.Index(p, "{"+param)]
	seg := path.Base(strings.TrimSuffix(before, "/"))
	if seg == "/" || seg == "." || strings.Contains(seg, "{") {
		seg = ""
	}
	v := strings.ToLower(nonWord.ReplaceAllString(seg+"_"+param, "_"))
	return strings.Trim(v, "_")
}

// placeholder is a var's value until someone gives a real one: 1 for
// what looks like a number, else the parameter's name.
func placeholder(r initscan.Route, name string) string {
	if pat := r.Patterns[name]; strings.Contains(pat, "0-9") || pat == `\d+` || strings.HasSuffix(strings.ToLower(name), "id") {
		return "1"
	}
	return name
}
