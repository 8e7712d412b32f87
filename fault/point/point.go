// Package point is the fault source of failpoint markers in the target: a
// fault names a point (its full path or a unique suffix) and an action in
// user terms, which inject makes a failpoint term, switched through the
// target's control endpoint.
package point

import (
	"errors"
	"strings"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/netfault"
)

func init() {
	fault.Register(&fault.Source{Name: "point", Marker: true,
		Names: func(s *fault.Spec) bool { return s.Proxy == "" && s.Process == "" },
		Check: check,
		Overlap: func(sc fault.Scope, s *fault.Spec, phase, other string) {
			sc.Errorf(".point", "a failpoint holds one term at a time; give the faults separate after/for windows, or merge them with action: term", "failpoint %s has two faults at once in phase %q: this one and %s", s.Path, phase, other)
		},
		Actuator: func(env fault.Env) fault.Actuator { return actuator{env} }})
}

// check checks a failpoint fault: its point resolved against the target's
// catalog (when known) and its action made a term.
func check(sc fault.Scope, s *fault.Spec) bool {
	if s.Point == "" {
		sc.Errorf(".point", "add point: name-of-failpoint (or proxy: NAME, or process: NAME)", "fault has no point")
		return false
	}
	if s.Settings != (netfault.Fault{}) {
		sc.Errorf("", "remove the proxy settings, or name the proxy the fault is on", "a failpoint fault takes no proxy settings (direction, latency, jitter, rate, ...)")
		return false
	}
	if m := s.Match; m != nil {
		switch {
		case m.Method != "" || m.Path != "" || m.GRPCMethod != "":
			sc.Errorf(".match", "match a header the load sends on those requests, such as headers: {X-Tenant: b}; or put the fault on an HTTP or gRPC proxy", "a failpoint fault matches requests by headers only, not by method, path or gRPC method")
			return false
		case len(m.Headers) == 0:
			sc.Errorf(".match", "such as headers: {X-Tenant: b}", "a failpoint fault's match needs headers")
			return false
		case s.Count != 0:
			sc.Errorf(".count", "remove count, or the match", "a failpoint fault with a match takes no count: the marker counts the calls of every request, matched or not")
			return false
		}
	}
	if s.Distribution != "" {
		switch {
		case s.Action != string(inject.Latency):
			sc.Errorf(".distribution", "remove it, or write action: latency", "action %s takes no distribution; only latency faults do", s.Action)
			return false
		case s.Value != "":
			sc.Errorf(".value", "remove value; the distribution gives the delay", "a latency fault takes a value or a distribution, not both")
			return false
		}
		s.Value = s.Distribution
	}
	s.Path = s.Point
	if cat := sc.Catalog(); cat != nil {
		path, err := cat.Resolve(s.Point)
		if err != nil {
			sc.Errorf(".point", CatalogHint(err, cat), "%v", err)
			return false
		}
		s.Path = path
	}
	action := inject.Action(s.Action)
	if !isAction(action) {
		sc.Errorf(".action", suggest.Hint(s.Action, actionNames()), "unknown fault action %q", s.Action)
		return true // its window is still checked
	}
	if !(s.Probability >= 0 && s.Probability <= 1) { // NaN too
		sc.Errorf(".probability", "write a share such as 0.3", "probability %v is outside 0..1", s.Probability)
		return true
	}
	if s.Count < 0 {
		sc.Errorf(".count", "", "count %d is negative", s.Count)
		return true
	}
	var match map[string]string
	if s.Match != nil {
		match = s.Match.Headers
	}
	term, err := inject.Fault{Action: action, Value: s.Value, Probability: s.Probability, Count: s.Count, Match: match}.Term(s.Path)
	if err == nil && action == inject.Term {
		err = inject.CheckTerm(term)
	}
	if err != nil {
		field := ".action"
		if s.Value != "" {
			field = ".value"
		}
		sc.Errorf(field, "", "%v", err)
		return true
	}
	s.Term = term
	return true
}

// CatalogHint is the hint to a point the catalog does not resolve: the
// target's failpoints, those near the name first.
func CatalogHint(err error, cat *inject.Catalog) string {
	var re *inject.ResolveError
	if errors.As(err, &re) && len(re.Candidates) == 0 {
		names := nearFirst(cat.Paths(), re.Name)
		if len(names) > 6 {
			names = append(names[:6], "…")
		}
		return "the target's failpoints are " + strings.Join(names, ", ")
	}
	return ""
}

// nearFirst orders the catalog so that the failpoints in the package the
// user named ("store/nosuch" names a package ending in store) come first:
// a truncated list then still shows the ones the user was after.
func nearFirst(paths []string, name string) []string {
	i := strings.LastIndex(name, "/")
	if i < 0 {
		return paths
	}
	pkg := name[:i]
	inPkg := func(p string) bool {
		dir := p[:max(strings.LastIndex(p, "/"), 0)]
		return dir == pkg || strings.HasSuffix(dir, "/"+pkg)
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if inPkg(p) {
			out = append(out, p)
		}
	}
	for _, p := range paths {
		if !inPkg(p) {
			out = append(out, p)
		}
	}
	return out
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

// actuator switches failpoints through the target's control endpoint.
type actuator struct{ env fault.Env }

func (a actuator) On(s fault.Spec) error { return a.env.EnableFailpoint(s.Path, s.Term) }

func (a actuator) Off(s fault.Spec, _ bool) error { return a.env.DisableFailpoint(s.Path) }

func (actuator) BackAtOnce(fault.Spec) bool { return false }
