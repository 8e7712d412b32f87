package plan

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/fault/point"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/scenarios"
)

// FaultSpace is the fuzz section of a fuzz scenario: the faults `chaoskit
// fuzz` and `chaoskit explore` draw fault schedules from. A fuzz scenario gives no
// phases of its own; each trial runs a fault-free phase named warmup, one to
// a few fault phases drawn from Faults, and a fault-free phase named
// recovery. The scenario's contracts are its invariants: they must hold
// whatever the faults, so they may name the warmup and recovery phases, or
// no phase (the whole run). See docs/fuzzing.md.
type FaultSpace struct {
	// Warmup is the length of the first, fault-free phase (default 2s);
	// Recovery that of the last one (default 3s).
	Warmup   Duration `yaml:"warmup"`
	Recovery Duration `yaml:"recovery"`
	// Phases is how many fault phases a trial has: "1..3" (the default) or
	// one number.
	Phases IntRange `yaml:"phases"`
	// Duration is how long each fault phase lasts: "1s..3s" (the default).
	Duration DurationRange `yaml:"duration"`
	// MaxFaults is the most faults one phase switches on; default 2. Every
	// fault phase has at least one.
	MaxFaults int `yaml:"max_faults"`
	// MinRate is the lowest rate shrinking lowers the load to; default
	// 50/s.
	MinRate Rate `yaml:"min_rate"`
	// Faults are the points that may fail and how.
	Faults []FuzzFault `yaml:"faults"`
}

// FuzzFault is one failpoint of the fault space, with the actions it may
// take and the values they may have.
type FuzzFault struct {
	// Point names the failpoint: its full path or a unique suffix of it.
	Point string `yaml:"point"`
	// Proxy, instead of Point, names one of the scenario's proxies;
	// Process the target or a dependency chaoskit starts.
	Proxy   string `yaml:"proxy"`
	Process string `yaml:"process"`
	// Actions are the actions a schedule may choose from: timeout, error,
	// latency, panic, status for a failpoint; latency, timeout,
	// reset_peer, down for a TCP proxy; abort, delay, drop for an HTTP or
	// gRPC proxy; kill, terminate, pause, restart for a process.
	Actions []string `yaml:"actions"`
	// Match, on an HTTP or gRPC proxy, restricts the faults to the
	// requests it names (see Fault.Match).
	Match *fault.Match `yaml:"match"`
	// Latency is the range latency faults draw their value from; default
	// 50ms..500ms.
	Latency DurationRange `yaml:"latency"`
	// Errors are the messages error faults choose from; default "injected
	// error".
	Errors []string `yaml:"errors"`
	// Statuses are the HTTP statuses status faults, and aborts on an HTTP
	// proxy, choose from; default 503. A gRPC proxy's aborts answer
	// UNAVAILABLE.
	Statuses []int `yaml:"statuses"`
	// Probability is the range of shares of evaluations that fire:
	// "0.2..1", or one number; default 1 (always).
	Probability FloatRange `yaml:"probability"`

	// Path is Point resolved against the target's failpoints, or
	// proxy/NAME, filled in by validation.
	Path string `yaml:"-"`
}

// Name is how schedules and coverage name the fault: its point as the
// fault space writes it, or proxy/NAME.
func (f FuzzFault) Name() string {
	switch {
	case f.Proxy != "":
		return "proxy/" + f.Proxy
	case f.Process != "":
		return "process/" + f.Process
	}
	return f.Point
}

// IsPoint says whether the fault is a failpoint's (not a proxy's or a
// process's).
func (f FuzzFault) IsPoint() bool { return f.Proxy == "" && f.Process == "" }

// fuzzProxyActions are the proxy faults a fault space may name: those
// whose settings chaoskit can vary or needs none of.
var fuzzProxyActions = []string{"latency", "timeout", "reset_peer", "down"}

// fuzzRequestActions are the faults of an HTTP or gRPC proxy a fault
// space may name: those whose value chaoskit can vary or needs none.
var fuzzRequestActions = []string{"abort", "delay", "drop"}

// fuzzProcessActions are the process faults a fault space may name.
var fuzzProcessActions = []string{"kill", "terminate", "pause", "restart"}

// Names of the fault-free phases every fuzz trial starts and ends with.
const (
	FuzzWarmup   = "warmup"
	FuzzRecovery = "recovery"
)

// Defaults of a fuzz section.
const (
	defaultFuzzWarmup    = 2 * time.Second
	DefaultFuzzRecovery  = 3 * time.Second
	DefaultFuzzMaxFaults = 2
)

// fuzzActions are the actions a fault space may name: every action but a
// raw term, whose meaning chaoskit cannot vary.
var fuzzActions = []inject.Action{inject.Timeout, inject.Error, inject.Latency, inject.Panic, inject.Status}

// IntRange is an inclusive range of integers written "1..3", or one number.
type IntRange struct{ Min, Max int }

// DurationRange is an inclusive range of durations written "1s..3s", or
// one duration.
type DurationRange struct{ Min, Max time.Duration }

// FloatRange is an inclusive range of numbers written "0.2..1", or one
// number.
type FloatRange struct{ Min, Max float64 }

// IsZero reports whether no range was given.
func (r IntRange) IsZero() bool { return r == IntRange{} }

// IsZero reports whether no range was given.
func (r DurationRange) IsZero() bool { return r == DurationRange{} }

// IsZero reports whether no range was given.
func (r FloatRange) IsZero() bool { return r == FloatRange{} }

func (r IntRange) String() string      { return rangeText(strconv.Itoa(r.Min), strconv.Itoa(r.Max)) }
func (r DurationRange) String() string { return rangeText(r.Min.String(), r.Max.String()) }
func (r FloatRange) String() string {
	return rangeText(strconv.FormatFloat(r.Min, 'f', -1, 64), strconv.FormatFloat(r.Max, 'f', -1, 64))
}

func rangeText(lo, hi string) string {
	if lo == hi {
		return lo
	}
	return lo + ".." + hi
}

// splitRange splits "a..b" (or "a") into its ends.
func splitRange(n ast.Node, hint string) (string, string, error) {
	s, ok := scalar(n)
	if !ok {
		return "", "", errAt(n, hint, "a range must be a plain value")
	}
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "..")
	if !found {
		hi = lo
	}
	return strings.TrimSpace(lo), strings.TrimSpace(hi), nil
}

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (r *IntRange) UnmarshalYAML(n ast.Node) error {
	const hint = "write a count such as 2 or a range such as 1..3"
	lo, hi, err := splitRange(n, hint)
	if err != nil {
		return err
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	switch {
	case err1 != nil || err2 != nil:
		return errAt(n, hint, "bad range %q", lo+".."+hi)
	case a < 1 || b < a:
		return errAt(n, hint, "range %d..%d is empty or starts below 1", a, b)
	}
	*r = IntRange{a, b}
	return nil
}

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (r *DurationRange) UnmarshalYAML(n ast.Node) error {
	const hint = "write a duration such as 2s or a range such as 500ms..3s"
	lo, hi, err := splitRange(n, hint)
	if err != nil {
		return err
	}
	a, err1 := time.ParseDuration(lo)
	b, err2 := time.ParseDuration(hi)
	switch {
	case err1 != nil || err2 != nil:
		return errAt(n, hint, "bad duration range %q", lo+".."+hi)
	case a <= 0 || b < a:
		return errAt(n, hint, "duration range %v..%v is empty or not positive", a, b)
	}
	*r = DurationRange{a, b}
	return nil
}

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (r *FloatRange) UnmarshalYAML(n ast.Node) error {
	const hint = "write a share such as 0.5 or a range such as 0.2..1"
	lo, hi, err := splitRange(n, hint)
	if err != nil {
		return err
	}
	a, err1 := strconv.ParseFloat(lo, 64)
	b, err2 := strconv.ParseFloat(hi, 64)
	switch {
	case err1 != nil || err2 != nil || math.IsNaN(a) || math.IsNaN(b):
		return errAt(n, hint, "bad range %q", lo+".."+hi)
	case a <= 0 || b > 1 || b < a:
		return errAt(n, hint, "probability range %v..%v must lie within 0..1, above 0", a, b)
	}
	*r = FloatRange{a, b}
	return nil
}

// validateFuzz checks a fuzz section, fills in its defaults and gives the
// scenario its fault-free skeleton (warmup, recovery) as phases, so that
// contracts naming them validate and `chaoskit run` of a fuzz scenario is a
// run without faults.
func (v *validator) validateFuzz() {
	fz := v.sc.Fuzz
	if fz == nil {
		return
	}
	const at = "$.fuzz"
	if len(v.sc.Phases) > 0 {
		v.errorf("$.phases", "remove phases: chaoskit fuzz draws them; set fuzz.warmup, fuzz.recovery, fuzz.phases and fuzz.duration instead", "a fuzz scenario has no phases of its own")
		return
	}
	if fz.Warmup == 0 {
		fz.Warmup = Duration(defaultFuzzWarmup)
	}
	if fz.Recovery == 0 {
		fz.Recovery = Duration(DefaultFuzzRecovery)
	}
	if fz.Phases.IsZero() {
		fz.Phases = IntRange{1, 3}
	}
	if fz.Duration.IsZero() {
		fz.Duration = DurationRange{time.Second, 3 * time.Second}
	}
	if fz.MaxFaults == 0 {
		fz.MaxFaults = DefaultFuzzMaxFaults
	}
	if fz.MinRate.IsZero() {
		fz.MinRate = Rate{Freq: 50, Per: time.Second}
	}
	if fz.MaxFaults < 0 {
		v.errorf(at+".max_faults", "", "max_faults %d is negative", fz.MaxFaults)
	}
	if fz.Duration.Max > MaxPhase {
		v.errorf(at+".duration", "keep fault phases short", "fault phases of up to %v are longer than the %v limit", fz.Duration.Max, MaxPhase)
	}
	if fz.Phases.Max > 20 {
		v.errorf(at+".phases", "a schedule of a few short phases finds more in the same time", "up to %d fault phases per trial is more than 20", fz.Phases.Max)
	}
	if len(fz.Faults) == 0 {
		v.errorf(at, "add faults: [{point: store/productQuery, actions: [timeout, error]}]", "the fault space has no faults")
	}
	var cat *inject.Catalog
	if v.opts.Catalog != nil && slices.ContainsFunc(fz.Faults, FuzzFault.IsPoint) {
		var err error
		if cat, err = v.catalogFor(); err != nil && err != errUnreachableTarget {
			v.errorf("$.target", "", "cannot list the target's failpoints: %v", err)
		}
	}
	seen := map[string]string{}
	for i := range fz.Faults {
		v.validateFuzzFault(fmt.Sprintf("%s.faults[%d]", at, i), &fz.Faults[i], cat, seen)
	}
	v.sc.Phases = []Phase{
		{Name: FuzzWarmup, Duration: fz.Warmup},
		{Name: FuzzRecovery, Duration: fz.Recovery},
	}
}

func (v *validator) validateFuzzFault(at string, f *FuzzFault, cat *inject.Catalog, seen map[string]string) {
	switch {
	case f.Proxy != "" && f.Process != "":
		v.errorf(at, "split it into one fault per source", "a fuzz fault names one of point, proxy or process")
		return
	case f.Proxy != "":
		v.validateFuzzProxyFault(at, f, seen)
		return
	case f.Process != "":
		v.validateFuzzProcessFault(at, f, seen)
		return
	}
	if f.Point == "" {
		v.errorf(at, "add point: name-of-failpoint (or proxy: NAME, or process: NAME)", "fault has no point")
		return
	}
	f.Path = f.Point
	if cat != nil {
		p, err := cat.Resolve(f.Point)
		if err != nil {
			v.errorf(at+".point", point.CatalogHint(err, cat), "%v", err)
			return
		}
		f.Path = p
	}
	if prev, dup := seen[f.Path]; dup {
		v.errorf(at+".point", "list each failpoint once, with all its actions", "failpoint %s is already listed at %s", f.Path, prev)
	}
	seen[f.Path] = at
	if len(f.Actions) == 0 {
		v.errorf(at, "add actions: [timeout, error]", "fault %s has no actions", f.Point)
	}
	names := make([]string, len(fuzzActions))
	for i, a := range fuzzActions {
		names[i] = string(a)
	}
	for j, a := range f.Actions {
		if !fuzzAction(inject.Action(a)) {
			v.errorf(fmt.Sprintf("%s.actions[%d]", at, j), suggest.Hint(a, names), "action %q cannot be fuzzed", a)
		}
	}
	if f.Latency.IsZero() {
		f.Latency = DurationRange{50 * time.Millisecond, 500 * time.Millisecond}
	}
	if f.Probability.IsZero() {
		f.Probability = FloatRange{1, 1}
	}
	if len(f.Errors) == 0 {
		f.Errors = []string{inject.DefaultErrorMessage}
	}
	if len(f.Statuses) == 0 {
		f.Statuses = []int{503}
	}
	for j, code := range f.Statuses {
		if code < 100 || code > 599 {
			v.errorf(fmt.Sprintf("%s.statuses[%d]", at, j), "write an HTTP status such as 503", "status %d is not an HTTP status", code)
		}
	}
	for j, msg := range f.Errors {
		if strings.TrimSpace(msg) == "" {
			v.errorf(fmt.Sprintf("%s.errors[%d]", at, j), "", "error message %d is empty", j+1)
		} else if _, err := (inject.Fault{Action: inject.Error, Value: msg}).Term(f.Path); err != nil {
			v.errorf(fmt.Sprintf("%s.errors[%d]", at, j), "", "%v", err)
		}
	}
}

// validateFuzzProxyFault checks a proxy of the fault space.
func (v *validator) validateFuzzProxyFault(at string, f *FuzzFault, seen map[string]string) {
	if f.Point != "" {
		v.errorf(at, "split it into a point fault and a proxy fault", "a fuzz fault names a point or a proxy, not both")
		return
	}
	var names []string
	for _, p := range v.sc.Proxies {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, f.Proxy) {
		hint := "declare it under proxies: [{name: " + f.Proxy + ", upstream: ...}]"
		if len(names) > 0 {
			hint = suggest.Hint(f.Proxy, names)
		}
		v.errorf(at+".proxy", hint, "no proxy named %q", f.Proxy)
		return
	}
	f.Path = f.Name()
	if prev, dup := seen[f.Path]; dup {
		v.errorf(at+".proxy", "list each proxy once, with all its actions", "proxy %s is already listed at %s", f.Proxy, prev)
	}
	seen[f.Path] = at
	scope := faultScope{v: v, at: at}
	if decl, _ := scope.Proxy(f.Proxy); fault.Serving(decl.Protocol) != nil {
		v.validateFuzzRequestFault(at, f, decl)
		return
	}
	if f.Match != nil {
		v.errorf(at+".match", "declare the proxy with protocol: http (or grpc) to fault some requests only", "a TCP proxy sees connections, not requests: its faults take no match")
	}
	if len(f.Actions) == 0 {
		v.errorf(at, "add actions: [latency, reset_peer]", "fault %s has no actions", f.Path)
	}
	for j, a := range f.Actions {
		if !slices.Contains(fuzzProxyActions, a) {
			v.errorf(fmt.Sprintf("%s.actions[%d]", at, j), suggest.Hint(a, fuzzProxyActions), "proxy action %q cannot be fuzzed", a)
		}
	}
	if len(f.Errors) > 0 || len(f.Statuses) > 0 {
		v.errorf(at, "remove errors and statuses: a proxy fault has neither", "a proxy fault takes no errors or statuses")
	}
	if f.Latency.IsZero() {
		f.Latency = DurationRange{50 * time.Millisecond, 500 * time.Millisecond}
	}
	if f.Latency.Min%time.Millisecond != 0 || f.Latency.Max%time.Millisecond != 0 {
		v.errorf(at+".latency", "whole milliseconds, which toxiproxy counts in", "latency range %v has a fraction of a millisecond", f.Latency)
	}
	if f.Probability.IsZero() {
		f.Probability = FloatRange{1, 1}
	}
}

// validateFuzzRequestFault checks a proxy of the fault space that speaks
// HTTP or gRPC: its actions, and its match as the proxy's source checks it.
func (v *validator) validateFuzzRequestFault(at string, f *FuzzFault, decl fault.ProxyDecl) {
	if len(f.Actions) == 0 {
		v.errorf(at, "add actions: [abort, delay]", "fault %s has no actions", f.Path)
	}
	for j, a := range f.Actions {
		if !slices.Contains(fuzzRequestActions, a) {
			v.errorf(fmt.Sprintf("%s.actions[%d]", at, j), suggest.Hint(a, fuzzRequestActions), "%s proxy action %q cannot be fuzzed", decl.Protocol, a)
		}
	}
	switch {
	case len(f.Errors) > 0:
		v.errorf(at+".errors", "remove errors: an HTTP or gRPC proxy aborts with a status", "a %s proxy fault takes no errors", decl.Protocol)
	case len(f.Statuses) > 0 && decl.Protocol != "http":
		v.errorf(at+".statuses", "remove statuses: a gRPC proxy's aborts answer UNAVAILABLE", "a %s proxy fault takes no HTTP statuses", decl.Protocol)
	}
	if len(f.Statuses) == 0 && decl.Protocol == "http" {
		f.Statuses = []int{503}
	}
	for j, code := range f.Statuses {
		if code < 200 || code > 599 {
			v.errorf(fmt.Sprintf("%s.statuses[%d]", at, j), "write an HTTP status such as 503", "status %d is not an HTTP status from 200 to 599", code)
		}
	}
	if f.Latency.IsZero() {
		f.Latency = DurationRange{50 * time.Millisecond, 500 * time.Millisecond}
	}
	if f.Probability.IsZero() {
		f.Probability = FloatRange{1, 1}
	}
	// The match is the source's to check, as in a fault of a phase.
	spec := fault.Spec{Proxy: f.Proxy, Protocol: decl.Protocol, Action: "abort", Match: f.Match}
	fault.Of(&spec).Check(faultScope{v: v, at: at}, &spec)
}

// validateFuzzProcessFault checks a process of the fault space: the target
// or a dependency chaoskit starts, with process actions only.
func (v *validator) validateFuzzProcessFault(at string, f *FuzzFault, seen map[string]string) {
	if f.Point != "" {
		v.errorf(at, "split it into one fault per source", "a fuzz fault names one of point, proxy or process")
		return
	}
	scope := faultScope{v: v, at: at}
	names := scope.Processes()
	switch {
	case !slices.Contains(names, f.Process):
		v.errorf(at+".process", suggest.Hint(f.Process, names), "no process named %q: process faults act on the target or a dependency", f.Process)
		return
	case f.Process == TargetProcess && !scope.TargetStarted():
		v.errorf(at+".process", "give target.command, so that chaoskit starts the service and can stop it", "the target is not started by chaoskit, so it cannot be killed or paused")
		return
	}
	f.Path = f.Name()
	if prev, dup := seen[f.Path]; dup {
		v.errorf(at+".process", "list each process once, with all its actions", "process %s is already listed at %s", f.Process, prev)
	}
	seen[f.Path] = at
	if len(f.Actions) == 0 {
		v.errorf(at, "add actions: [kill, pause]", "fault %s has no actions", f.Path)
	}
	for j, a := range f.Actions {
		if !slices.Contains(fuzzProcessActions, a) {
			v.errorf(fmt.Sprintf("%s.actions[%d]", at, j), suggest.Hint(a, fuzzProcessActions), "process action %q cannot be fuzzed", a)
		}
	}
	if len(f.Errors) > 0 || len(f.Statuses) > 0 || !f.Latency.IsZero() || !f.Probability.IsZero() {
		v.errorf(at, "remove everything but process and actions", "a process fault takes no errors, statuses, latency or probability")
	}
}

func fuzzAction(a inject.Action) bool {
	for _, x := range fuzzActions {
		if x == a {
			return true
		}
	}
	return false
}

// BundledFuzzNames lists the bundled fuzz scenarios by name (their file
// names without .yaml).
func BundledFuzzNames() []string {
	files, _ := fs.Glob(scenarios.Fuzz, "fuzz/*.yaml")
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = strings.TrimSuffix(path.Base(f), ".yaml")
	}
	sort.Strings(out)
	return out
}

// BundledFuzz loads the bundled fuzz scenario called name.
func BundledFuzz(name string, opts Options) (*Scenario, error) {
	file := "fuzz/" + name + ".yaml"
	data, err := fs.ReadFile(scenarios.Fuzz, file)
	if err != nil {
		return nil, ErrorList{{File: name, Msg: "no bundled fuzz scenario of that name", Hint: suggest.Hint(name, BundledFuzzNames())}}
	}
	scs, err := loadFiles([]string{file}, func(string) ([]byte, error) { return data, nil }, opts)
	if err != nil {
		return nil, err
	}
	return scs[0], nil
}
