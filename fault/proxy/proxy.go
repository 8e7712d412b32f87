// Package proxy is the fault source of the scenario's proxies: a fault
// names a proxy and a netfault kind with its settings, run as a toxic on
// the in-process proxy between the target and a dependency.
package proxy

import (
	"errors"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/netfault"
)

func init() {
	fault.Register(&fault.Source{Name: "proxy",
		Names: func(s *fault.Spec) bool { return s.Proxy != "" && (s.Protocol == "" || s.Protocol == "tcp") },
		Check: check,
		Overlap: func(sc fault.Scope, s *fault.Spec, phase, other string) {
			sc.Errorf(".proxy", "give the faults separate after/for windows, or put a second proxy in front of the same upstream", "proxy %s has two faults at once in phase %q: this one and %s", s.Proxy, phase, other)
		},
		Actuator: func(env fault.Env) fault.Actuator { return actuator{env} }})
}

// check checks a fault on a proxy and fills in Path, Term and Net.
func check(sc fault.Scope, s *fault.Spec) bool {
	if s.Point != "" || s.Process != "" {
		sc.Errorf("", "split it into one fault per source", "a fault names one of point, proxy or process")
		return false
	}
	names := sc.Proxies()
	found := false
	for _, n := range names {
		found = found || n == s.Proxy
	}
	if !found {
		hint := "declare it under proxies: [{name: " + s.Proxy + ", upstream: ...}]"
		if len(names) > 0 {
			hint = suggest.Hint(s.Proxy, names)
		}
		sc.Errorf(".proxy", hint, "no proxy named %q", s.Proxy)
		return false
	}
	if s.Match != nil {
		sc.Errorf(".match", "declare the proxy with protocol: http (or grpc) to fault some requests only", "a TCP proxy sees connections, not requests: its faults take no match")
		return false
	}
	if s.Value != "" || s.Count != 0 {
		field := ".value"
		if s.Value == "" {
			field = ".count"
		}
		sc.Errorf(field, "give a proxy fault's settings by name (latency, jitter, rate, delay, timeout, bytes, average_size, size_variation)", "a proxy fault takes no value or count")
		return false
	}
	nf := s.Settings
	nf.Distribution = s.Distribution
	nf.Proxy, nf.Kind, nf.Probability = s.Proxy, netfault.Kind(s.Action), s.Probability
	var fe *netfault.FieldError
	if err := nf.Validate(); errors.As(err, &fe) {
		field := fe.Field
		if field == "kind" {
			field = "action"
		}
		sc.Errorf("."+field, fe.Fix, "%s", fe.Problem)
		return false
	} else if err != nil {
		sc.Errorf("", "", "%v", err)
		return false
	}
	s.Path, s.Term, s.Net = "proxy/"+s.Proxy, nf.String(), &nf
	return true
}

// actuator puts toxics on the run's in-process proxies.
type actuator struct{ env fault.Env }

func (a actuator) On(s fault.Spec) error { return a.env.EnableProxy(*s.Net) }

func (a actuator) Off(s fault.Spec, _ bool) error { return a.env.DisableProxy(*s.Net) }

func (actuator) BackAtOnce(fault.Spec) bool { return false }
