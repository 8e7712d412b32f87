package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/scenarios"
)

// Options control loading.
type Options struct {
	// Catalog returns the failpoints of a scenario's target, against which
	// fault points are resolved; a request it makes to a running service
	// goes only where allow says (the scenario's Reach). Nil leaves points
	// unresolved.
	Catalog func(t Target, allow *reach.Policy) (*inject.Catalog, error)
	// Vars override the scenarios' vars (--var name=value).
	Vars map[string]string
	// RateScale multiplies every rate of every phase; 0 means 1. Any
	// other value must be a finite number above 0.
	RateScale float64
	// ReadFile reads the files a scenario includes; nil reads them from
	// disk, regular files of at most MaxFile bytes only.
	ReadFile func(name string) ([]byte, error)
	// SkipBodyFiles leaves every request's body_file unread (its body
	// empty): for judging a saved run, which sends no load.
	SkipBodyFiles bool
	// AllowHosts are the hosts beyond loopback the command consents to
	// (--allow-host): a scenario's allow_hosts entry not among them is an
	// error, and one among them is where its run may send traffic
	// (Scenario.Reach). A host given here but not in allow_hosts allows
	// nothing. With SkipBodyFiles (nothing is sent) no consent is asked,
	// and a host it does not name is not reached either.
	AllowHosts []string

	// savedIncludes maps include paths to the copies a run directory holds
	// of them (see LoadCopy); when it is set, no include is read from
	// anywhere else.
	savedIncludes map[string]savedCopy
}

// Defaults applied to fields a scenario leaves out.
const (
	defaultTimeout       = 2 * time.Second
	DefaultWorkers       = 10
	DefaultMaxWorkers    = 500
	DefaultReadyPath     = "/healthz"
	DefaultReadyTimeout  = 15 * time.Second
	DefaultStateInterval = 100 * time.Millisecond
	DefaultStopGrace     = 3 * time.Second
	// MaxPhase bounds one phase so that no run goes on for ever.
	MaxPhase = time.Hour
	// MaxBodyFile bounds a request body read from a file.
	MaxBodyFile = 4 << 20
)

// LoadFile reads, decodes and validates one scenario file.
func LoadFile(path string, opts Options) (*Scenario, error) {
	data, err := readScenarioFile(path)
	if err != nil {
		return nil, ErrorList{readError(path, err)}
	}
	return Parse(path, data, opts)
}

// Parse decodes and validates a scenario held in data; name is used in
// error positions and relative paths are taken from its directory. Every
// problem is reported at once, sorted by file and position.
func Parse(name string, data []byte, opts Options) (*Scenario, error) {
	l := &loader{name: name, data: data, opts: opts}
	sc, errs := l.parse()
	if len(errs) > 0 {
		errs.sort()
		for _, e := range errs {
			e.setExcerpt(l.source(e.File))
		}
		return nil, errs
	}
	return sc, nil
}

// loader loads one scenario file and the files it includes.
type loader struct {
	name string
	data []byte
	opts Options
	incs []*included
}

// source returns the text of file, the scenario or a file it includes, for
// error excerpts.
func (l *loader) source(file string) []byte {
	if file == l.name {
		return l.data
	}
	for _, inc := range l.incs {
		if inc.name == file {
			return inc.data
		}
	}
	return nil
}

func (l *loader) parse() (*Scenario, ErrorList) {
	name, data, opts := l.name, l.data, l.opts
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, ErrorList{{File: name, Msg: "scenario file is empty", Hint: "see docs/scenarios.md for an example"}}
	}
	if e := checkRateScale(opts.RateScale); e != nil {
		return nil, ErrorList{e}
	}
	if e := checkSize(name, data); e != nil {
		return nil, ErrorList{e}
	}
	// The vars (and includes) are read from a copy in which every ${name}
	// is blanked out (see blankRefs).
	raw, err := parser.ParseBytes(blankRefs(data), 0)
	if err != nil {
		return nil, ErrorList{decodeError(name, err)}
	}
	if e := checkShape(name, raw); e != nil {
		return nil, ErrorList{e}
	}
	var errs ErrorList
	if e := secondDocument(name, raw); e != nil {
		errs = append(errs, e)
	}
	declared, verrs := declaredVars(name, raw, data)
	errs = append(errs, verrs...)
	incs, ierrs := readIncludes(name, raw, opts)
	l.incs = incs
	errs = append(errs, ierrs...)
	// Values: the included files' vars in order, the file's own, --var.
	values := map[string]string{}
	for _, inc := range incs {
		for k, v := range inc.vars {
			values[k] = v
		}
	}
	for k, v := range declared {
		values[k] = v
	}
	for k, v := range opts.Vars {
		values[k] = v
	}
	text, cols, used, serrs := substitute(name, data, values)
	errs = append(errs, serrs...)
	for _, inc := range incs {
		var incUsed map[string]bool
		inc.text, inc.cols, incUsed, serrs = substitute(inc.name, inc.data, values)
		errs = append(errs, serrs...)
		for k := range incUsed {
			used[k] = true
		}
		for k := range inc.vars {
			declared[k] = inc.vars[k]
		}
	}
	var sc Scenario
	failed := map[string]bool{}
	// Included files are decoded first into the same value: the file's own
	// fields then override theirs (mappings merge, lists are replaced).
	var derrs ErrorList
	undecoded := false
	var shape ErrorList
	for _, inc := range incs {
		if inc.ast = decodeInto(&sc, inc.name, inc.text, inc.cols, failed, &derrs, &undecoded); inc.ast == nil {
			undecoded = true
			continue
		}
		// A value never adds a field, in an included file as in the
		// scenario itself.
		shape = append(shape, sameShape(inc.name, inc.raw, inc.ast, inc.cols)...)
	}
	file := decodeInto(&sc, name, text, cols, failed, &derrs, &undecoded)
	shape = append(shape, sameShape(name, raw, file, cols)...)
	if len(shape) > 0 {
		return nil, append(errs, shape...)
	}
	errs = append(errs, echoesOf(errs, derrs)...)
	switch {
	case file == nil:
		return nil, errs
	case len(file.Docs) == 0 || file.Docs[0].Body == nil:
		return nil, append(errs, &Error{File: name, Msg: "scenario file holds no document", Hint: "see docs/scenarios.md for an example"})
	case len(ierrs) > 0:
		// Without an included file, validation would only report what
		// that file was meant to give.
		return nil, errs
	case undecoded:
		// A file did not parse, or the decoder failed where the checker
		// saw nothing wrong: what was decoded is not the scenario.
		return nil, errs
	}
	sc.File, sc.Source, sc.Values = name, data, values
	for _, inc := range incs {
		sc.Included = append(sc.Included, IncludedFile{Spec: inc.spec, Path: inc.name, Data: inc.data})
	}
	sc.names = map[string]bool{}
	for k := range declared {
		sc.names[k] = true
	}
	for k := range used {
		sc.names[k] = true
	}
	v := &validator{file: name, dir: filepath.Dir(name), ast: file, sc: &sc, opts: opts, cols: cols, includes: incs, failed: failed}
	v.validate()
	errs = append(errs, echoesOf(errs, v.errs)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return &sc, nil
}

// decodeInto checks and decodes one file's text (after substitution) into
// sc, adding every problem to errs; it returns the parsed file, or nil when
// the text cannot be parsed. It sets undecoded when the decoder failed
// where the checker saw nothing wrong.
func decodeInto(sc *Scenario, file string, text []byte, cols colMap, failed map[string]bool, errs *ErrorList, undecoded *bool) *ast.File {
	// A variable's value may be long, or YAML of its own.
	if e := checkSize(file, text); e != nil {
		e.Col = cols.orig(e.Line, e.Col)
		*errs = append(*errs, e)
		return nil
	}
	f, err := parser.ParseBytes(text, 0)
	if err != nil {
		e := decodeError(file, err)
		e.Col = cols.orig(e.Line, e.Col)
		*errs = append(*errs, e)
		return nil
	}
	if e := checkShape(file, f); e != nil {
		e.Col = cols.orig(e.Line, e.Col)
		*errs = append(*errs, e)
		return nil
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		return f
	}
	body := f.Docs[0].Body
	c := &checker{file: file, cols: cols, anchors: anchorsOf(f), failed: failed}
	c.check(body, reflect.TypeFor[Scenario](), "$", nil)
	*errs = append(*errs, c.errs...)
	// The values the checker refused are null now: what fails here is
	// something it does not know (a duplicate key), after which the
	// decoded value cannot be trusted to validate.
	if err := decodeSafely(func() error { return yaml.NodeToValue(body, sc) }); err != nil {
		e := decodeError(file, err)
		e.Col = cols.orig(e.Line, e.Col)
		*errs = append(*errs, echoesOf(c.errs, ErrorList{e})...)
		*undecoded = true
	}
	return f
}

// echoesOf returns the errors of later that are not echoes of one in
// earlier: at the same place, or on a line where a variable has no value
// (whatever is wrong there follows from that).
func echoesOf(earlier, later ErrorList) ErrorList {
	type place struct {
		file      string
		line, col int
	}
	at, lines := map[place]bool{}, map[place]bool{}
	for _, e := range earlier {
		if e.Line > 0 {
			at[place{e.File, e.Line, e.Col}] = true
		}
		if e.unresolved {
			lines[place{e.File, e.Line, 0}] = true
		}
	}
	var out ErrorList
	for _, e := range later {
		if e.Line > 0 && (at[place{e.File, e.Line, e.Col}] || lines[place{e.File, e.Line, 0}]) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// secondDocument reports a second YAML document in f: a scenario file
// holds one, and the decoder would silently ignore the rest.
func secondDocument(file string, f *ast.File) *Error {
	for _, doc := range f.Docs[min(1, len(f.Docs)):] {
		if doc == nil || doc.Body == nil {
			continue // a trailing --- with nothing after it
		}
		tk := doc.Start
		if tk == nil {
			tk = doc.Body.GetToken()
		}
		e := &Error{File: file, Msg: "a second YAML document starts here; a scenario file holds one",
			Hint: "put each scenario in its own file, or remove the ---"}
		if tk != nil {
			e.Line, e.Col = tk.Position.Line, tk.Position.Column
		}
		return e
	}
	return nil
}

// decodeSafely runs a YAML decode, which panics on some malformed input
// (a bare tag: `phases: ! `, found by go-fuzz), and reports such a panic
// as an error.
func decodeSafely(decode func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the YAML cannot be read (the decoder failed: %v)", p)
		}
	}()
	return decode()
}

// collect expands files and directories into the scenario files they hold
// (*.yaml and *.yml, not recursing, leaving out partials: see isPartial),
// in the order given (a directory's files by name), without duplicates: a
// user who names a.yaml before b.yaml runs a first. A file named on its own
// is kept, partial or not.
func collect(paths []string) ([]string, error) {
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
		files, partials, err := scenarioFiles(p)
		if err != nil {
			return nil, ErrorList{{File: p, Msg: err.Error()}}
		}
		if len(files) == 0 {
			e := &Error{File: p, Msg: "directory holds no scenario files (*.yaml, *.yml)"}
			if len(partials) > 0 {
				e.Hint = "its files whose names start with _ are partials, read only when a scenario includes them"
			}
			return nil, ErrorList{e}
		}
		for _, f := range files {
			add(f)
		}
	}
	return out, nil
}

// isPartial says whether a file, by its name, is a partial scenario: a
// file meant only to be included by others (a shared target, load or
// contracts), which directories of scenarios skip. Its name starts with _,
// as partials do in Sass and in static site generators: _common.yaml.
func isPartial(path string) bool { return strings.HasPrefix(filepath.Base(path), "_") }

// Partials lists the partial scenario files (see isPartial) in the
// directories among paths, sorted: the files collect leaves out.
func Partials(paths []string) []string {
	var out []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			_, partials, _ := scenarioFiles(p)
			out = append(out, partials...)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// scenarioFiles lists a directory's scenario files and partials.
func scenarioFiles(dir string) (files, partials []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		if p := filepath.Join(dir, e.Name()); isPartial(p) {
			partials = append(partials, p)
		} else {
			files = append(files, p)
		}
	}
	return files, partials, nil
}

// LoadAll loads every scenario under paths (see collect) and reports every
// problem in every file at once. Scenario names must be unique, and every
// variable in opts.Vars must be one some scenario declares or uses.
func LoadAll(paths []string, opts Options) ([]*Scenario, error) {
	files, err := collect(paths)
	if err != nil {
		return nil, err
	}
	return loadFiles(files, readScenarioFile, opts)
}

func loadFiles(files []string, read func(string) ([]byte, error), opts Options) ([]*Scenario, error) {
	if e := checkRateScale(opts.RateScale); e != nil {
		return nil, ErrorList{e}
	}
	var out []*Scenario
	var errs ErrorList
	names := map[string]string{}
	known := map[string]bool{}
	var failed []string
	read = boundedRead(read)
	opts.ReadFile = read
	for _, f := range files {
		data, err := read(f)
		if err != nil {
			errs = append(errs, readError(f, err))
			continue
		}
		sc, err := Parse(f, data, opts)
		var l ErrorList
		if errors.As(err, &l) {
			errs = append(errs, l...)
			failed = append(failed, f)
			continue
		}
		if prev, dup := names[sc.Name]; dup {
			errs = append(errs, &Error{File: f, Msg: fmt.Sprintf("scenario name %q is already used by %s", sc.Name, prev), Hint: "give each scenario its own name"})
			continue
		}
		names[sc.Name] = f
		for n := range sc.names {
			known[n] = true
		}
		out = append(out, sc)
	}
	errs = append(errs, partialHints(failed, out)...)
	errs.sort()
	if len(errs) == 0 {
		var all []string
		for n := range known {
			all = append(all, n)
		}
		sort.Strings(all)
		var unknown []string
		for n := range opts.Vars {
			if !known[n] {
				unknown = append(unknown, n)
			}
		}
		sort.Strings(unknown)
		for _, n := range unknown {
			hint := suggest.Hint(n, all)
			if len(all) == 0 {
				hint = "these scenarios declare no vars"
			}
			errs = append(errs, &Error{File: "--var", Msg: fmt.Sprintf("no scenario declares or uses variable %q", n), Hint: hint})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// partialHints explains the failure of a file that another scenario
// includes: it is a partial, loaded as a scenario of its own because its
// name does not say it is one.
func partialHints(failed []string, loaded []*Scenario) ErrorList {
	by := map[string][]string{}
	for _, sc := range loaded {
		for _, inc := range sc.Included {
			p := filepath.Clean(inc.Path)
			by[p] = append(by[p], filepath.Base(sc.File))
		}
	}
	var out ErrorList
	for _, f := range failed {
		if includers := by[filepath.Clean(f)]; len(includers) > 0 && !isPartial(f) {
			base := filepath.Base(f)
			out = append(out, &Error{File: f, Msg: fmt.Sprintf("%s is included by %s, and does not load as a scenario of its own", base, strings.Join(includers, ", ")),
				Hint: fmt.Sprintf("name it _%s, and its include too: directories of scenarios skip files whose names start with _", base)})
		}
	}
	return out
}

// Bundled loads the scenarios embedded in the binary.
func Bundled(opts Options) ([]*Scenario, error) {
	files, err := fs.Glob(scenarios.Main, "*.yaml")
	if err != nil {
		return nil, err
	}
	return loadFiles(files, func(f string) ([]byte, error) { return fs.ReadFile(scenarios.Main, f) }, opts)
}

// validator checks a decoded scenario and records errors at YAML paths.
type validator struct {
	file string
	dir  string
	ast  *ast.File
	sc   *Scenario
	opts Options
	cols colMap
	errs ErrorList
	// includes are the files the scenario includes, for error positions.
	includes []*included
	// failed are the YAML paths whose values did not decode: an error at
	// one of them (or below) would say the same thing again.
	failed map[string]bool
	// rateReported holds the loads whose rate was found too high.
	rateReported map[string]bool

	catalog    *inject.Catalog
	catalogErr error
	catalogRun bool

	// listed allows the hosts allow_hosts lists, consented to or not: an
	// address on one is not refused where it is written (the missing
	// consent is reported at the entry).
	listed *reach.Policy
}

// errorf records an error at the node the YAML path names (or its nearest
// existing parent).
func (v *validator) errorf(path, hint, format string, args ...any) {
	if isFailed(v.failed, path) {
		return
	}
	e := &Error{Msg: fmt.Sprintf(format, args...), Hint: hint}
	e.File, e.Line, e.Col = v.locate(path)
	v.errs = append(v.errs, e)
}

// locate returns where the node at a YAML path (or its nearest existing
// parent) is written, as a column of the file before substitution.
func (v *validator) locate(path string) (file string, line, col int) {
	file, cols := v.file, v.cols
	// A value the file itself does not hold came from an included file:
	// the last one that holds it (the one whose value was kept).
	line, col, ok := nodeAt(v.ast, path)
	for i := len(v.includes) - 1; !ok && i >= 0; i-- {
		inc := v.includes[i]
		if line, col, ok = nodeAt(inc.ast, path); ok {
			file, cols = inc.name, inc.cols
		}
	}
	if !ok {
		line, col = v.position(path)
	}
	return file, line, cols.orig(line, col)
}

// nodeAt returns the position of the node at a YAML path in f, if there is
// one.
func nodeAt(f *ast.File, path string) (int, int, bool) {
	if f == nil {
		return 0, 0, false
	}
	yp, err := yaml.PathString(path)
	if err != nil {
		return 0, 0, false
	}
	n, err := yp.FilterFile(f)
	if err != nil || n == nil || n.GetToken() == nil {
		return 0, 0, false
	}
	tk := n.GetToken()
	// A block mapping's token is the first ':' in it; its first key is
	// where a reader looks.
	if m, ok := n.(*ast.MappingNode); ok && !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key.GetToken() != nil {
		tk = m.Values[0].Key.GetToken()
	}
	return tk.Position.Line, tk.Position.Column, true
}

// position is where in the file itself the node at path, or its nearest
// existing parent, is.
func (v *validator) position(path string) (int, int) {
	for p := path; p != ""; p = parentPath(p) {
		if line, col, ok := nodeAt(v.ast, p); ok {
			return line, col
		}
	}
	return 1, 1
}

// parentPath returns the path of the node that holds the one at p ("$"
// for a top-level field), or "" for the root.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// path resolves a file name relative to the scenario's directory.
func (v *validator) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(v.dir, p)
}

func (v *validator) validate() {
	sc := v.sc
	if msg := checkName(sc.Name); msg != "" {
		v.errorf("$.name", nameHint(sc.Name), "%s", msg)
	}
	v.validateAllowHosts()
	v.validateTarget()
	if p, ok := ProfileOf(sc.Target); ok {
		sc.conventions = p.Conventions
	}
	v.validateDeps()
	v.checkPasswordRefs()
	v.validateLoad("$.load", &sc.Load, true)
	v.validateFuzz()
	phases := map[string]*Phase{}
	if len(sc.Phases) == 0 {
		v.errorf("$.phases", "add a phases list with at least one phase", "scenario has no phases")
	}
	for i := range sc.Phases {
		p := &sc.Phases[i]
		at := fmt.Sprintf("$.phases[%d]", i)
		switch {
		case strings.TrimSpace(p.Name) == "":
			v.errorf(at+".name", "", "phase %d has no name", i+1)
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
		p.Effective = sc.Load
		if p.Load != nil {
			v.validateLoad(at+".load", p.Load, false)
			p.Effective = sc.Load.Merge(*p.Load)
			if e := p.Effective; e.Workers > e.MaxWorkers {
				v.errorf(at+".load", "", "workers %d and max_workers %d: need workers <= max_workers", e.Workers, e.MaxWorkers)
			}
		}
		if v.checkRate(at, p) && v.opts.RateScale > 0 {
			p.Effective = p.Effective.Scale(v.opts.RateScale)
		}
		v.checkThink(at, p)
		v.validateFaults(at, p)
	}
	t := sc.Target
	if t.Command == nil && t.Demo == nil && t.URL != "" && t.Failpoints == "" {
		for i, p := range sc.Phases {
			if p.HasPointFaults() {
				v.errorf(fmt.Sprintf("$.phases[%d].faults", i), "add target.failpoints: the address of the service's failpoint control endpoint", "phase %q switches faults but the target has no failpoint control endpoint", p.Name)
				break
			}
		}
	}
	for i := range sc.Contracts {
		v.validateContract(i, phases)
		c := &sc.Contracts[i]
		c.Position.File, c.Position.Line, c.Position.Column = v.locate(fmt.Sprintf("$.contracts[%d]", i))
	}
	v.validateSetup()
	v.validateGRPCOnly()
	v.metricNames()
	v.validatePrometheus()
	if g := sc.Target.GRPC; g != nil && g.Files != nil && len(v.errs) == 0 {
		if err := sc.CheckGRPC(g.Files); err != nil {
			v.errs = append(v.errs, err.(ErrorList)...)
		}
	}
}

// checkRate refuses a phase whose load, after --rate-scale, asks for more
// than MaxRate at any moment, and says whether the rate is within it.
func (v *validator) checkRate(at string, p *Phase) bool {
	scale := 1.0
	if v.opts.RateScale > 0 {
		scale = v.opts.RateScale
	}
	peak := p.Effective.peakRate() * scale
	if peak <= MaxRate {
		return true
	}
	// The rate is reported where it is written: the phase's own load, or
	// the scenario's (once, for all the phases that use it).
	path, field := "$.load", "rate"
	if p.Load != nil && (!p.Load.Rate.IsZero() || p.Load.Pacer != nil) {
		path = at + ".load"
	}
	if p.Effective.Pacer != nil {
		field = "pacer"
	}
	if v.rateReported[path] {
		return false
	}
	if v.rateReported == nil {
		v.rateReported = map[string]bool{}
	}
	v.rateReported[path] = true
	what := fmt.Sprintf("rate %v", p.Effective.Rate)
	if p.Effective.Pacer != nil {
		what = "the pacer's peak rate"
	}
	if scale != 1 {
		what += fmt.Sprintf(" × --rate-scale %v", scale)
	}
	v.errorf(path+"."+field, "lower the rate: one machine sends at most some hundreds of thousands of requests a second, so a rate above the ceiling is a slip",
		"%s is %.0f requests a second, more than the %d/s chaoskit can attempt", what, peak, MaxRate)
	return false
}

func (v *validator) validateTarget() {
	t := &v.sc.Target
	kinds := 0
	for _, set := range []bool{t.Demo != nil, t.Command != nil, (t.URL != "" || t.GRPC != nil) && t.Command == nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		v.errorf("$.target", "write target: {demo: {args: []}}, target: {command: {argv: [...]}, url: http://127.0.0.1:{port}} or target: {url: http://127.0.0.1:8080, failpoints: http://127.0.0.1:7070}", "target names no service")
	case t.Demo != nil && (t.Command != nil || t.URL != ""):
		v.errorf("$.target", "keep demo, or command with url, or url alone", "target has demo and also command or url")
	case t.Demo != nil && t.Failpoints != "":
		v.errorf("$.target.failpoints", "remove failpoints: the demo's control endpoint is chosen by chaoskit", "the demo target takes no failpoints address")
	}
	if t.Demo != nil {
		v.checkNUL("$.target.demo.args", t.Demo.Args...)
		if p, ok := ProfileOf(*t); ok && p.CheckArgs != nil {
			// The demo parses its args once chaoskit has filled their port
			// placeholders; any port will do to check them.
			args := make([]string, len(t.Demo.Args))
			for i, a := range t.Demo.Args {
				args[i] = portRef.ReplaceAllString(a, "1")
			}
			if err := p.CheckArgs(args); err != nil {
				v.errorf("$.target.demo.args", "chaoskit demo serve --help says what each flag does", "demo args %q: %v", t.Demo.Args, err)
			}
		}
	}
	ports := t.PortNames()
	if len(ports) > 0 && t.Command == nil {
		v.errorf("$.target", "use {port} only with target.command, which chaoskit starts with the chosen ports", "target uses a {port} placeholder but chaoskit does not start it")
	}
	dummy := map[string]int{}
	for _, n := range ports {
		dummy[n] = 1
	}
	if t.Command != nil {
		c := t.Command
		switch {
		case len(c.Argv) == 0 || strings.TrimSpace(c.Argv[0]) == "":
			v.errorf("$.target.command.argv", "write command: {argv: [./bin/server, --listen, \"127.0.0.1:{port}\"]}", "command has no argv")
		case t.URL == "" && t.GRPC == nil:
			v.errorf("$.target.command", "add url: http://127.0.0.1:{port} and pass {port} to the command (or grpc: {address: ...} for a gRPC-only service)", "target.command needs a url: where the started service listens")
		}
		v.checkNUL("$.target.command.argv", c.Argv...)
		v.checkNUL("$.target.command.dir", c.Dir)
		c.Dir = v.path(c.Dir)
		if c.Dir == "" {
			c.Dir = v.dir
		}
		for k, val := range c.Env {
			if k == "" || strings.ContainsAny(k, "= \x00") {
				v.errorf("$.target.command.env", "", "environment variable name %q is not valid", k)
			}
			v.checkNUL("$.target.command.env."+k, val)
		}
	}
	// A service chaoskit starts listens on loopback; one already running
	// may be elsewhere, by consent.
	started := t.Command != nil || t.Demo != nil
	if t.URL != "" {
		if started {
			if err := CheckLoopback(FillPorts(t.URL, dummy)); err != nil {
				v.errorf("$.target.url", "a service chaoskit starts listens on loopback (127.0.0.0/8, ::1)", "%v", err)
			}
		} else {
			v.checkReach("$.target.url", "", FillPorts(t.URL, dummy))
		}
	}
	if t.Failpoints != "" {
		if started {
			if err := CheckLoopback(FillPorts(t.Failpoints, dummy)); err != nil {
				v.errorf("$.target.failpoints", "the control endpoint of a service chaoskit starts must be on a loopback address", "%v", err)
			}
		} else {
			v.checkReach("$.target.failpoints", "", FillPorts(t.Failpoints, dummy))
		}
	}
	if t.Hits == "" {
		t.Hits = inject.HitsPath
	} else if !strings.HasPrefix(t.Hits, "/") {
		v.errorf("$.target.hits", "write a path such as /debug/chaoskit/faults", "hits %q is not a path", t.Hits)
	}
	r := &t.Ready
	if r.Path == "" {
		r.Path = DefaultReadyPath
	} else if !strings.HasPrefix(r.Path, "/") {
		v.errorf("$.target.ready.path", "write a path such as /healthz", "readiness path %q is not a path", r.Path)
	}
	if r.Status == 0 {
		r.Status = 200
	} else if r.Status < 100 || r.Status > 599 {
		v.errorf("$.target.ready.status", "write an HTTP status such as 200", "readiness status %d is not an HTTP status", r.Status)
	}
	if r.Timeout == 0 {
		r.Timeout = Duration(DefaultReadyTimeout)
	}
	if s := t.State; s != nil {
		if !strings.HasPrefix(s.Path, "/") {
			v.errorf("$.target.state.path", "write a path such as /debug/chaoskit/state", "state path %q is not a path", s.Path)
		}
		switch {
		case s.Interval == 0:
			s.Interval = Duration(DefaultStateInterval)
		case s.Interval.D() < 10*time.Millisecond:
			v.errorf("$.target.state.interval", "sample at most every 10ms", "state interval %v is too short", s.Interval.D())
		}
	}
	v.validateMetricsProbe(t.Metrics)
	v.validateTLS()
	v.validateGRPCTarget()
	if t.StopGrace == 0 {
		t.StopGrace = Duration(DefaultStopGrace)
	}
	if t.Source != "" {
		t.Source = v.path(t.Source)
		if st, err := os.Stat(t.Source); err != nil || !st.IsDir() {
			v.errorf("$.target.source", "give the directory of the service's Go module, relative to the scenario file", "source %s is not a directory", t.Source)
		}
	} else if len(t.Packages) > 0 {
		v.errorf("$.target.packages", "add source: the directory the packages are in", "packages given without source")
	}
}

// checkNUL refuses strings that hold a NUL character, which no program can
// be given in an argument, its environment or a path: the run would fail
// to start the target.
func (v *validator) checkNUL(path string, ss ...string) {
	for i, s := range ss {
		if !strings.ContainsRune(s, 0) {
			continue
		}
		at := path
		if len(ss) > 1 || strings.HasSuffix(path, "argv") || strings.HasSuffix(path, "args") {
			at = fmt.Sprintf("%s[%d]", path, i)
		}
		v.errorf(at, "remove the \\0", "%q holds a NUL character, which no program can be given", s)
	}
}

// CheckLoopback fails unless raw (a URL or host:port) names a loopback
// address: 127.0.0.0/8, ::1 or localhost.
func CheckLoopback(raw string) error { return CheckReach(raw, nil) }

// CheckReach fails unless raw (a URL or host:port) names a loopback
// address or a host p allows (see Scenario.Reach).
func CheckReach(raw string, p *reach.Policy) error {
	host, err := reach.Host(raw)
	if err != nil {
		return err
	}
	if p.AllowsHost(host) {
		return nil
	}
	if p == nil {
		return fmt.Errorf("%q is not a loopback address", host)
	}
	return fmt.Errorf("%q is not a loopback address nor a host allowed by consent", host)
}

var methods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true}

var sineStarts = map[string]float64{"": 0, "mean-up": 0, "peak": 0.5, "mean-down": 1, "trough": 1.5}

// SineStart returns the phase, in multiples of π, a sine pacer starts at.
func (p SinePacer) SineStart() float64 { return sineStarts[p.Start] }

// validateLoad checks a load; full is false for a phase's override, whose
// unset fields come from the scenario's load.
func (v *validator) validateLoad(at string, l *Load, full bool) {
	if full {
		if l.Rate.IsZero() && l.Pacer == nil {
			v.errorf(at+".rate", "add rate: 100/s", "load has no rate")
		}
		if l.Timeout == 0 {
			l.Timeout = Duration(defaultTimeout)
		}
		if l.Workers == 0 {
			l.Workers = DefaultWorkers
		}
		if l.MaxWorkers == 0 {
			l.MaxWorkers = DefaultMaxWorkers
		}
		if l.Workers > l.MaxWorkers {
			v.errorf(at+".workers", "", "workers %d and max_workers %d: need workers <= max_workers", l.Workers, l.MaxWorkers)
		}
		if len(l.Requests) == 0 {
			v.errorf(at+".requests", "add requests: [{method: GET, path: /}]", "load has no requests")
		}
	}
	if l.Workers < 0 || l.MaxWorkers < 0 || l.Connections < 0 {
		v.errorf(at, "", "workers, max_workers and connections must not be negative")
	}
	if !l.Rate.IsZero() && l.Pacer != nil {
		v.errorf(at+".pacer", "keep rate for a constant rate or pacer for a changing one", "load has both rate and pacer")
	}
	if l.Pacer != nil {
		v.validatePacer(at+".pacer", l.Pacer)
	}
	calls := 0
	for i := range l.Requests {
		v.validateRequest(fmt.Sprintf("%s.requests[%d]", at, i), &l.Requests[i])
		if l.Requests[i].GRPC != nil {
			calls++
		}
	}
	if calls > 0 && calls < len(l.Requests) {
		v.errorf(at+".requests", "give the gRPC calls a phase of their own, or a load of their own in a phase", "a load's requests are all grpc: calls or none: this one mixes %d calls with %d HTTP requests", calls, len(l.Requests)-calls)
	}
}

func (v *validator) validatePacer(at string, p *Pacer) {
	n := 0
	if p.Linear != nil {
		n++
		if p.Linear.From.IsZero() || p.Linear.To.IsZero() {
			v.errorf(at+".linear", "write linear: {from: 50/s, to: 500/s}", "linear pacer needs from and to")
		}
	}
	if p.Sine != nil {
		n++
		s := p.Sine
		switch {
		case s.Mean.IsZero() || s.Amplitude.IsZero() || s.Period == 0:
			v.errorf(at+".sine", "write sine: {mean: 200/s, amplitude: 100/s, period: 10s}", "sine pacer needs mean, amplitude and period")
		case s.Amplitude.PerSecond() >= s.Mean.PerSecond():
			v.errorf(at+".sine.amplitude", "make the amplitude smaller than the mean", "sine amplitude %v would drive the rate to zero or below (mean %v)", s.Amplitude, s.Mean)
		}
		if _, ok := sineStarts[s.Start]; !ok {
			v.errorf(at+".sine.start", suggest.Hint(s.Start, []string{"mean-up", "peak", "mean-down", "trough"}), "unknown sine start %q", s.Start)
		}
	}
	if p.Steps != nil {
		n++
		if len(p.Steps) == 0 {
			v.errorf(at+".steps", "write steps: [{rate: 50/s, for: 2s}, {rate: 200/s}]", "steps pacer has no steps")
		}
		for i, s := range p.Steps {
			sat := fmt.Sprintf("%s.steps[%d]", at, i)
			if s.Rate.IsZero() {
				v.errorf(sat, "add rate: 100/s", "step %d has no rate", i+1)
			}
			if s.For == 0 && i < len(p.Steps)-1 {
				v.errorf(sat, "add for: 2s (only the last step may leave it out)", "step %d has no duration", i+1)
			}
		}
	}
	if n != 1 {
		v.errorf(at, "choose one of linear, sine or steps", "a pacer needs exactly one of linear, sine or steps")
	}
}

// templateName is what a request template's name may be.
var templateName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

func (v *validator) validateRequest(at string, r *RequestSpec) {
	if r.Chain != nil {
		v.validateChain(at, r)
		return
	}
	if r.GRPC != nil {
		v.validateGRPCRequest(at, r)
		v.validateTemplateLabels(at, r)
		return
	}
	if r.Method == "" {
		r.Method = "GET"
	}
	r.Method = strings.ToUpper(r.Method)
	if !methods[r.Method] {
		v.errorf(at+".method", "use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS", "unknown method %q", r.Method)
	}
	v.validateTemplateLabels(at, r)
	if !strings.HasPrefix(r.Path, "/") {
		v.errorf(at+".path", "paths start with /", "path %q is not absolute", r.Path)
	} else if _, err := compileTemplate(r.Path); err != nil {
		v.errorf(at+".path", "write {1..50}, {a|b}, {random:1..50} or {seq}", "%v", err)
	}
	for k, h := range r.Headers {
		if _, err := compileTemplate(h); err != nil {
			v.errorf(at+".headers."+k, "", "%v", err)
		}
	}
	if r.BodyFile != "" {
		if r.Body != "" {
			v.errorf(at+".body_file", "keep body or body_file", "request has both body and body_file")
			return
		}
		if v.opts.SkipBodyFiles {
			return
		}
		name := v.path(r.BodyFile)
		st, err := os.Stat(name)
		switch {
		case err != nil:
			v.errorf(at+".body_file", "the path is relative to the scenario file", "cannot read body_file: %v", err)
			return
		case !st.Mode().IsRegular():
			// A device or a pipe (/dev/zero, a FIFO) would never end.
			v.errorf(at+".body_file", "give a regular file", "body_file %s is not a regular file", name)
			return
		case st.Size() > MaxBodyFile:
			v.errorf(at+".body_file", "", "body_file %s is larger than %d bytes", name, MaxBodyFile)
			return
		}
		data, err := readBoundedScenario(name, MaxBodyFile)
		if err != nil {
			v.errorf(at+".body_file", "", "cannot read body_file: %v", err)
			return
		}
		r.Body, r.BodyFile = string(data), name
	}
	if _, err := compileTemplate(r.Body); err != nil {
		v.errorf(at+".body", "", "%v", err)
	}
}

// validateTemplateLabels checks a request template's weight, name and
// tags.
func (v *validator) validateTemplateLabels(at string, r *RequestSpec) {
	if r.Weight < 0 {
		v.errorf(at+".weight", "", "weight %d is negative", r.Weight)
	}
	if r.Name != "" && !templateName.MatchString(r.Name) {
		v.errorf(at+".name", "letters, digits, '_', '-' and '.', such as create-link", "request name %q cannot be used", r.Name)
	}
	for j, tag := range r.Tags {
		if tag == "" || strings.ContainsAny(tag, ",") || strings.HasPrefix(tag, "=") {
			v.errorf(fmt.Sprintf("%s.tags[%d]", at, j), "a tag is a word such as create: no comma, not empty, not starting with =", "tag %q cannot be used", tag)
		}
	}
}

// Merge returns l with every field o sets replacing l's.
func (l Load) Merge(o Load) Load {
	if !o.Rate.IsZero() || o.Pacer != nil {
		l.Rate, l.Pacer = o.Rate, o.Pacer
	}
	if o.Timeout != 0 {
		l.Timeout = o.Timeout
	}
	if o.Workers != 0 {
		l.Workers = o.Workers
	}
	if o.MaxWorkers != 0 {
		l.MaxWorkers = o.MaxWorkers
	}
	if o.Connections != 0 {
		l.Connections = o.Connections
	}
	if o.HTTP2 != nil {
		l.HTTP2 = o.HTTP2
	}
	if o.Seed != 0 {
		l.Seed = o.Seed
	}
	if len(o.Requests) > 0 {
		l.Requests = o.Requests
	}
	return l
}

// Scale returns the load with every rate multiplied by f.
func (l Load) Scale(f float64) Load {
	l.Rate = l.Rate.Scale(f)
	if l.Pacer != nil {
		p := *l.Pacer
		if p.Linear != nil {
			p.Linear = &LinearPacer{From: p.Linear.From.Scale(f), To: p.Linear.To.Scale(f)}
		}
		if p.Sine != nil {
			s := *p.Sine
			s.Mean, s.Amplitude = s.Mean.Scale(f), s.Amplitude.Scale(f)
			p.Sine = &s
		}
		if p.Steps != nil {
			steps := make([]Step, len(p.Steps))
			for i, s := range p.Steps {
				steps[i] = Step{Rate: s.Rate.Scale(f), For: s.For}
			}
			p.Steps = steps
		}
		l.Pacer = &p
	}
	return l
}

// catalogFor returns the target's failpoint catalog, asking for it once.
// A running service the run may not reach is not asked
// (errUnreachableTarget): its address is refused already, where it is
// written or at its allow_hosts entry.
func (v *validator) catalogFor() (*inject.Catalog, error) {
	if !v.catalogRun {
		v.catalogRun = true
		t := v.sc.Target
		if host, err := reach.Host(t.URL); t.Command == nil && t.Demo == nil && t.URL != "" && err == nil && !v.sc.Reach.AllowsHost(host) {
			v.catalogErr = errUnreachableTarget
		} else {
			v.catalog, v.catalogErr = v.opts.Catalog(t, v.sc.Reach)
		}
	}
	return v.catalog, v.catalogErr
}

// errUnreachableTarget is catalogFor's answer for a target the run may not
// reach, whose error is reported elsewhere.
var errUnreachableTarget = errors.New("the target is not reachable")

func (v *validator) validateFaults(at string, p *Phase) {
	unserved := v.proxyProtocols(p.Faults)
	var cat *inject.Catalog
	if v.opts.Catalog != nil && p.HasPointFaults() {
		var err error
		if cat, err = v.catalogFor(); err != nil {
			if err != errUnreachableTarget && !v.catalogReported() {
				v.errorf("$.target", "", "cannot list the target's failpoints: %v", err)
			}
			return
		}
	}
	type window struct {
		on, off time.Duration
		index   int
	}
	windows := map[string][]window{}
	for j := range p.Faults {
		f := &p.Faults[j]
		fat := fmt.Sprintf("%s.faults[%d]", at, j)
		if unserved[j] {
			continue
		}
		src := f.Source()
		if !v.checkFault(src, fat, f, cat) {
			continue
		}
		on, off := f.Window(p.Duration.D())
		switch {
		case p.Duration <= 0:
			// The phase's missing duration is reported already.
		case f.After >= p.Duration:
			v.errorf(fat+".after", "make after shorter than the phase", "fault starts %v into phase %q, which lasts %v", f.After.D(), p.Name, p.Duration.D())
		case off > p.Duration.D():
			v.errorf(fat+".for", "make after + for fit in the phase", "fault lasts until %v into phase %q, which lasts %v", off, p.Name, p.Duration.D())
		}
		// One error per fault, naming the first earlier one it overlaps:
		// four restarts at once are three errors, not six.
		for _, w := range windows[f.Path] {
			if on < w.off && w.on < off {
				spec := f.Spec()
				src.Overlap(faultScope{v, fat, cat}, &spec, p.Name, fmt.Sprintf("faults[%d] (%v–%v)", w.index, w.on, w.off))
				break
			}
		}
		windows[f.Path] = append(windows[f.Path], window{on, off, j})
	}
}

// catalogReported says whether the catalog error was already recorded.
func (v *validator) catalogReported() bool {
	for _, e := range v.errs {
		if strings.HasPrefix(e.Msg, "cannot list the target's failpoints") {
			return true
		}
	}
	return false
}

// yamlFields maps every field name the schema knows to the places it is a
// field of ("phases[].faults[]"), for unknown-field hints.
var yamlFields = func() map[string][]string {
	out := map[string][]string{}
	pkg := reflect.TypeOf(Scenario{}).PkgPath()
	var walk func(t reflect.Type, at string, depth int)
	walk = func(t reflect.Type, at string, depth int) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			if t.Kind() == reflect.Slice {
				at += "[]"
			} else if t.Kind() == reflect.Map {
				at += ".NAME"
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != pkg || depth > 6 {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			place := at
			if place == "" {
				place = "the top level"
			}
			if !slices.Contains(out[name], place) {
				out[name] = append(out[name], place)
			}
			next := name
			if at != "" {
				next = at + "." + name
			}
			walk(f.Type, next, depth+1)
		}
	}
	walk(reflect.TypeOf(Scenario{}), "", 0)
	return out
}()

// fieldHint suggests what an unknown field name meant: the nearest of the
// fields where it stands; else, for a field of that name elsewhere in the
// schema, where it belongs; else the nearest anywhere in the schema. It
// never suggests the name that was typed (another case of it, yes: YAML
// keys are case-sensitive).
func fieldHint(name string, here []string) string {
	others := func(names []string) []string {
		var out []string
		for _, n := range names {
			if n != name {
				out = append(out, n)
			}
		}
		return out
	}
	if s, ok := suggest.Closest(name, others(here)); ok {
		return fmt.Sprintf("did you mean %q?", s)
	}
	if places, ok := yamlFields[name]; ok {
		const most = 4
		list, more := places, ""
		if len(places) > most {
			list, more = places[:most], fmt.Sprintf(" (and %d more places)", len(places)-most)
		}
		return fmt.Sprintf("%q is a field of %s%s, not of this mapping", name, strings.Join(list, ", "), more)
	}
	all := make([]string, 0, len(yamlFields))
	for n := range yamlFields {
		all = append(all, n)
	}
	sort.Strings(all)
	if s, ok := suggest.Closest(name, others(all)); ok {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return "see docs/scenarios.md for the fields a scenario takes"
}
