package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/chaoskit/chaoskit/inject"
)

// Options control loading.
type Options struct {
	// Catalog returns the failpoints of a scenario's target, against which
	// fault points are resolved. Nil leaves points unresolved.
	Catalog func(t Target) (*inject.Catalog, error)
}

// Defaults applied to fields a scenario leaves out.
const (
	DefaultTimeout    = 2 * time.Second
	DefaultWorkers    = 10
	DefaultMaxWorkers = 500
	// MaxPhase bounds one phase so that no run goes on for ever.
	MaxPhase = time.Hour
)

// LoadFile reads, decodes and validates one scenario file.
func LoadFile(path string, opts Options) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, ErrorList{{File: path, Msg: err.Error()}}
	}
	return Parse(path, data, opts)
}

// Parse decodes and validates a scenario held in data; name is used in
// error positions.
func Parse(name string, data []byte, opts Options) (*Scenario, error) {
	var sc Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict(), yaml.DisallowUnknownField())
	if err := dec.Decode(&sc); err != nil {
		e := decodeError(name, err)
		if strings.HasPrefix(e.Msg, "unknown field") {
			e.Hint = fieldHint(e.Msg)
		}
		return nil, ErrorList{e}
	}
	sc.File = name
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, ErrorList{decodeError(name, err)}
	}
	v := &validator{file: name, ast: file, sc: &sc, opts: opts}
	v.validate()
	if len(v.errs) > 0 {
		v.errs.sort()
		return nil, v.errs
	}
	return &sc, nil
}

// Collect expands files and directories into the scenario files they hold
// (*.yaml and *.yml, not recursing), sorted, without duplicates.
func Collect(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, ErrorList{{File: p, Msg: "no such file or directory", Hint: "give a scenario file or a directory of them"}}
		}
		if !st.IsDir() {
			add(p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, ErrorList{{File: p, Msg: err.Error()}}
		}
		n := 0
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				add(filepath.Join(p, e.Name()))
				n++
			}
		}
		if n == 0 {
			return nil, ErrorList{{File: p, Msg: "directory holds no scenario files (*.yaml, *.yml)"}}
		}
	}
	sort.Strings(out)
	return out, nil
}

// LoadAll loads every scenario under paths (see Collect) and reports every
// problem in every file at once. Scenario names must be unique.
func LoadAll(paths []string, opts Options) ([]*Scenario, error) {
	files, err := Collect(paths)
	if err != nil {
		return nil, err
	}
	return loadFiles(files, os.ReadFile, opts)
}

func loadFiles(files []string, read func(string) ([]byte, error), opts Options) ([]*Scenario, error) {
	var out []*Scenario
	var errs ErrorList
	names := map[string]string{}
	for _, f := range files {
		data, err := read(f)
		if err != nil {
			errs = append(errs, &Error{File: f, Msg: err.Error()})
			continue
		}
		sc, err := Parse(f, data, opts)
		var l ErrorList
		if errors.As(err, &l) {
			errs = append(errs, l...)
			continue
		}
		if prev, dup := names[sc.Name]; dup {
			errs = append(errs, &Error{File: f, Msg: fmt.Sprintf("scenario name %q is already used by %s", sc.Name, prev), Hint: "give each scenario its own name"})
			continue
		}
		names[sc.Name] = f
		out = append(out, sc)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// Bundled loads the scenarios embedded in the binary.
func Bundled(opts Options) ([]*Scenario, error) {
	files, err := fs.Glob(bundled, "*.yaml")
	if err != nil {
		return nil, err
	}
	return loadFiles(files, func(f string) ([]byte, error) { return fs.ReadFile(bundled, f) }, opts)
}

// validator checks a decoded scenario and records errors at YAML paths.
type validator struct {
	file string
	ast  *ast.File
	sc   *Scenario
	opts Options
	errs ErrorList
}

// errorf records an error at the node the YAML path names (or its nearest
// existing parent).
func (v *validator) errorf(path, hint, format string, args ...any) {
	e := &Error{File: v.file, Msg: fmt.Sprintf(format, args...), Hint: hint}
	e.Line, e.Col = v.position(path)
	v.errs = append(v.errs, e)
}

func (v *validator) position(path string) (int, int) {
	for p := path; p != ""; p = parentPath(p) {
		yp, err := yaml.PathString(p)
		if err != nil {
			continue
		}
		n, err := yp.FilterFile(v.ast)
		if err != nil || n == nil {
			continue
		}
		tk := n.GetToken()
		if tk == nil {
			continue
		}
		return tk.Position.Line, tk.Position.Column
	}
	return 1, 1
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 1 {
		return ""
	}
	return p[:i]
}

func (v *validator) validate() {
	sc := v.sc
	if strings.TrimSpace(sc.Name) == "" {
		v.errorf("$", "add name: my-scenario", "scenario has no name")
	}
	v.validateTarget()
	v.validateLoad()
	phases := map[string]*Phase{}
	if len(sc.Phases) == 0 {
		v.errorf("$", "add a phases list with at least one phase", "scenario has no phases")
	}
	for i := range sc.Phases {
		p := &sc.Phases[i]
		at := fmt.Sprintf("$.phases[%d]", i)
		switch {
		case strings.TrimSpace(p.Name) == "":
			v.errorf(at, "", "phase %d has no name", i+1)
		case phases[p.Name] != nil:
			v.errorf(at+".name", "give each phase its own name", "phase name %q is used twice", p.Name)
		default:
			phases[p.Name] = p
		}
		switch {
		case p.Duration <= 0:
			v.errorf(at+".duration", "add duration: 5s", "phase %q has no duration", p.Name)
		case p.Duration.D() > MaxPhase:
			v.errorf(at+".duration", "split it into shorter phases", "phase %q lasts %v, more than the %v limit", p.Name, p.Duration.D(), MaxPhase)
		}
		v.validateFaults(at, p)
	}
	for i := range sc.Contracts {
		v.validateContract(i, phases)
	}
}

func (v *validator) validateTarget() {
	t := &v.sc.Target
	switch {
	case t.Demo != nil && t.URL != "":
		v.errorf("$.target", "keep one of them", "target has both demo and url")
	case t.Demo == nil && t.URL == "":
		v.errorf("$.target", "write target: {demo: {args: []}} or target: {url: http://127.0.0.1:8080, failpoints: http://127.0.0.1:7070}", "target names no service")
	case t.URL != "":
		if err := CheckLoopback(t.URL); err != nil {
			v.errorf("$.target.url", "chaoskit only sends load to loopback addresses (127.0.0.0/8, ::1)", "%v", err)
		}
		if t.Failpoints != "" {
			if err := CheckLoopback(t.Failpoints); err != nil {
				v.errorf("$.target.failpoints", "the control endpoint must be on a loopback address", "%v", err)
			}
		}
	}
	if t.Hits == "" {
		t.Hits = inject.HitsPath
	} else if !strings.HasPrefix(t.Hits, "/") {
		v.errorf("$.target.hits", "write a path such as /debug/chaoskit/faults", "hits %q is not a path", t.Hits)
	}
}

// CheckLoopback fails unless raw (a URL or host:port) names a loopback
// address: 127.0.0.0/8, ::1 or localhost.
func CheckLoopback(raw string) error {
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not a URL", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address", host)
	}
	return nil
}

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

func (v *validator) validateLoad() {
	l := &v.sc.Load
	if l.Rate.Freq == 0 {
		v.errorf("$.load.rate", "add rate: 100/s", "load has no rate")
	}
	if l.Timeout == 0 {
		l.Timeout = Duration(DefaultTimeout)
	}
	if l.Workers == 0 {
		l.Workers = DefaultWorkers
	}
	if l.MaxWorkers == 0 {
		l.MaxWorkers = DefaultMaxWorkers
	}
	if l.Workers < 0 || l.MaxWorkers < l.Workers {
		v.errorf("$.load.workers", "", "workers %d and max_workers %d: need 0 < workers <= max_workers", l.Workers, l.MaxWorkers)
	}
	if len(l.Requests) == 0 {
		v.errorf("$.load", "add requests: [{method: GET, path: /}]", "load has no requests")
	}
	for i := range l.Requests {
		r := &l.Requests[i]
		at := fmt.Sprintf("$.load.requests[%d]", i)
		if r.Method == "" {
			r.Method = "GET"
		}
		r.Method = strings.ToUpper(r.Method)
		if !methods[r.Method] {
			v.errorf(at+".method", "use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS", "unknown method %q", r.Method)
		}
		if !strings.HasPrefix(r.Path, "/") {
			v.errorf(at+".path", "paths start with /", "path %q is not absolute", r.Path)
			continue
		}
		if _, err := ExpandPath(r.Path); err != nil {
			v.errorf(at+".path", "write a range as {1..50}", "%v", err)
		}
	}
}

func (v *validator) validateFaults(at string, p *Phase) {
	var cat *inject.Catalog
	if v.opts.Catalog != nil && len(p.Faults) > 0 {
		var err error
		cat, err = v.opts.Catalog(v.sc.Target)
		if err != nil {
			v.errorf("$.target", "", "cannot list the target's failpoints: %v", err)
			return
		}
	}
	seen := map[string]bool{}
	for j := range p.Faults {
		f := &p.Faults[j]
		fat := fmt.Sprintf("%s.faults[%d]", at, j)
		if f.Point == "" {
			v.errorf(fat, "add point: name-of-failpoint", "fault has no point")
			continue
		}
		f.Path = f.Point
		if cat != nil {
			path, err := cat.Resolve(f.Point)
			if err != nil {
				v.errorf(fat+".point", catalogHint(err, cat), "%v", err)
				continue
			}
			f.Path = path
		}
		if seen[f.Path] {
			v.errorf(fat+".point", "a failpoint holds one term at a time; merge the faults or use action: term", "failpoint %s has two faults in phase %q", f.Path, p.Name)
		}
		seen[f.Path] = true
		action := inject.Action(f.Action)
		if !isAction(action) {
			v.errorf(fat+".action", didYouMean(f.Action, actionNames()), "unknown fault action %q", f.Action)
			continue
		}
		if f.Probability < 0 || f.Probability > 1 {
			v.errorf(fat+".probability", "write a share such as 0.3", "probability %v is outside 0..1", f.Probability)
			continue
		}
		if f.Count < 0 {
			v.errorf(fat+".count", "", "count %d is negative", f.Count)
			continue
		}
		term, err := inject.Fault{Action: action, Value: f.Value, Probability: f.Probability, Count: f.Count}.Term(f.Path)
		if err != nil {
			field := ".action"
			if f.Value != "" {
				field = ".value"
			}
			v.errorf(fat+field, "", "%v", err)
			continue
		}
		f.Term = term
	}
}

func catalogHint(err error, cat *inject.Catalog) string {
	var re *inject.ResolveError
	if errors.As(err, &re) && len(re.Candidates) == 0 {
		names := cat.Paths()
		if len(names) > 6 {
			names = append(names[:6], "…")
		}
		return "the target's failpoints are " + strings.Join(names, ", ")
	}
	return ""
}

func isAction(a inject.Action) bool {
	for _, x := range inject.Actions {
		if x == a {
			return true
		}
	}
	return false
}

func actionNames() []string {
	out := make([]string, len(inject.Actions))
	for i, a := range inject.Actions {
		out[i] = string(a)
	}
	return out
}

// didYouMean returns a hint naming the closest of choices to s, or listing
// them all when none is close.
func didYouMean(s string, choices []string) string {
	best, bestD := "", 1<<30
	for _, c := range choices {
		if d := inject.Distance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" && bestD <= max(2, len(s)/3) {
		return fmt.Sprintf("did you mean %q?", best)
	}
	if len(choices) == 0 {
		return ""
	}
	return "choose one of " + strings.Join(choices, ", ")
}

// yamlFields lists every field name the schema knows, for unknown-field hints.
var yamlFields = func() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeOf(Scenario{}).PkgPath() {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || seen[name] {
				continue
			}
			seen[name] = true
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Scenario{}))
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}()

func fieldHint(msg string) string {
	name := strings.TrimSuffix(strings.TrimPrefix(msg, `unknown field "`), `"`)
	h := didYouMean(name, yamlFields)
	if strings.HasPrefix(h, "did you mean") {
		return h
	}
	return "see docs/scenarios.md for the fields a scenario takes"
}
