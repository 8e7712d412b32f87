package plan

import (
	"strings"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/netfault"

	// The fault sources, one line each (see package fault).
	_ "github.com/chaoskit/chaoskit/fault/httpproxy"
	_ "github.com/chaoskit/chaoskit/fault/point"
	_ "github.com/chaoskit/chaoskit/fault/process"
	_ "github.com/chaoskit/chaoskit/fault/proxy"
)

// Spec returns f as its source sees it.
func (f Fault) Spec() fault.Spec {
	pf := f.ProxyFault
	return fault.Spec{Point: f.Point, Proxy: f.Proxy, Process: f.Process, Protocol: f.Protocol, Match: f.Match, Action: f.Action, Value: f.Value,
		Probability: f.Probability, Count: f.Count, For: f.For.D(),
		Settings: netfault.Fault{Direction: netfault.Direction(pf.Direction), Latency: pf.Latency.D(), Jitter: pf.Jitter.D(),
			Rate: pf.Rate, Delay: pf.Delay.D(), Timeout: pf.Timeout.D(), Bytes: pf.Bytes, AverageSize: pf.AverageSize, SizeVariation: pf.SizeVariation},
		Distribution: f.Dist, Path: f.Path, Term: f.Term, Net: f.Net}
}

// Source returns the source f comes from.
func (f Fault) Source() *fault.Source {
	s := f.Spec()
	return fault.Of(&s)
}

// checkFault checks f (written at fat) by its source, filling in its Path,
// Term and Net; false leaves the fault's window unchecked.
func (v *validator) checkFault(src *fault.Source, fat string, f *Fault, cat *inject.Catalog) bool {
	if f.Distribution != nil {
		d, ok := v.compileDistribution(fat+".distribution", f.Distribution)
		if !ok {
			return false
		}
		f.Dist = d
	}
	s := f.Spec()
	ok := src.Check(faultScope{v, fat, cat}, &s)
	f.Path, f.Term, f.Net = s.Path, s.Term, s.Net
	if f.Dist == unreadHistogram && f.Distribution.File != "" {
		named := "histogram of " + f.Distribution.File + " (not read)"
		f.Term = strings.NewReplacer(unreadHistogram, named, "histogram of 1 buckets up to 1ms", named).Replace(f.Term)
	}
	return ok
}

// faultScope is what a fault source's check asks of the scenario
// (fault.Scope), for the fault written at at.
type faultScope struct {
	v   *validator
	at  string
	cat *inject.Catalog
}

func (s faultScope) Errorf(field, hint, format string, args ...any) {
	s.v.errorf(s.at+field, hint, format, args...)
}

func (s faultScope) Proxies() []string {
	var names []string
	for _, p := range s.v.sc.Proxies {
		names = append(names, p.Name)
	}
	return names
}

func (s faultScope) Proxy(name string) (fault.ProxyDecl, bool) {
	for _, p := range s.v.sc.Proxies {
		if p.Name == name {
			return p.Decl(), true
		}
	}
	return fault.ProxyDecl{}, false
}

// proxyProtocols fills in the protocol of each fault on a proxy, which
// chooses its source. It says which faults name a proxy of a protocol no
// source serves (reported with the proxy): they have no source to check
// them.
func (v *validator) proxyProtocols(faults []Fault) (unserved []bool) {
	unserved = make([]bool, len(faults))
	for i := range faults {
		f := &faults[i]
		for _, p := range v.sc.Proxies {
			if f.Proxy == "" || p.Name != f.Proxy {
				continue
			}
			protocol := p.Decl().Protocol
			if protocol != "tcp" && fault.Serving(protocol) == nil {
				unserved[i] = true
				continue
			}
			f.Protocol = protocol
		}
	}
	return unserved
}

func (s faultScope) Processes() []string {
	names := []string{TargetProcess}
	for _, d := range s.v.sc.Dependencies {
		names = append(names, d.Name)
	}
	return names
}

func (s faultScope) TargetStarted() bool {
	return s.v.sc.Target.Demo != nil || s.v.sc.Target.Command != nil
}

func (s faultScope) Catalog() *inject.Catalog { return s.cat }
