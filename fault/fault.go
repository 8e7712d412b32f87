// Package fault is the registry of fault sources: failpoint markers in
// the target (fault/point), the scenario's TCP proxies (fault/proxy), its
// HTTP and gRPC proxies (fault/httpproxy), the processes chaoskit started
// (fault/process). A source is its own package:
// it says which faults it is named by, checks them as the loader reads
// them, and switches them on and off in a run through the Env the runner
// lends it. It registers itself with one Register call, and the loader
// links it with one import line (plan/sources.go); nothing else tells
// sources apart.
package fault

import (
	"io"
	"time"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/netfault"
	"github.com/chaoskit/chaoskit/timeline"
)

// Spec is one fault of a scenario as its source sees it: what the
// scenario writes, and what the source's Check fills in.
type Spec struct {
	// Point, Proxy and Process name what the fault acts on; which of them
	// is written says the source.
	Point, Proxy, Process string
	// Protocol is the protocol of the proxy a proxy fault names (tcp,
	// http, grpc), filled in by the loader before the source is chosen.
	Protocol      string
	Action, Value string
	Probability   float64
	Count         int
	// For is how long the fault lasts; zero is to the end of its phase.
	For time.Duration
	// Settings are a proxy fault's settings as written (direction,
	// latency, ...); the zero value when none is.
	Settings netfault.Fault
	// Match restricts the fault to some requests, for a source that sees
	// requests; nil is every request.
	Match *Match
	// Phase is the phase the run switches the fault on or off in, filled
	// in by the runner for the actuator.
	Phase string
	// Distribution is a latency fault's delay distribution in package
	// dist's text form, "" when none is written.
	Distribution string

	// Path is what the fault acts on, filled in by Check: the failpoint's
	// full path, "proxy/NAME" or "process/NAME".
	Path string
	// Term is the failpoint term, or another source's description of the
	// fault ("proxy postgres latency 300ms ±50ms"), filled in by Check.
	Term string
	// Net is a proxy fault as netfault runs it, filled in by Check.
	Net *netfault.Fault
}

// Match says which requests a fault applies to: each field given must
// hold. It is also how a fault targets one tenant or one caller: a header
// the load sends on some of its requests only.
type Match struct {
	// Method is the HTTP method, such as GET.
	Method string `yaml:"method" json:"method,omitempty"`
	// Path is a pattern of the request's path, as path.Match reads it:
	// /price/* matches /price/7 and not /price/7/history.
	Path string `yaml:"path" json:"path,omitempty"`
	// Headers are header values that must be sent exactly; the names are
	// matched in any case (gRPC metadata is sent as headers).
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// GRPCMethod is a gRPC method, package.Service/Method.
	GRPCMethod string `yaml:"grpc_method" json:"grpc_method,omitempty"`
}

// ProxyDecl is a proxy of the scenario, as a source sees it.
type ProxyDecl struct {
	Name     string
	Protocol string
	// Listen and Upstream are loopback addresses, their ports filled in
	// when the run starts the proxy.
	Listen, Upstream string
	// Methods are the gRPC methods the upstream serves, read from the
	// proxy's descriptor set; nil when none is given.
	Methods *protoregistry.Files
}

// Server is a proxy a source runs for the whole run (Source.Serve).
type Server interface {
	// Addr is the address it listens on.
	Addr() string
	// Close stops it; a fault still on goes with it.
	Close() error
}

// Scope is what a source's Check may ask of the scenario being loaded.
type Scope interface {
	// Errorf records an error at field of the fault (".point", or "" for
	// the fault itself), with a hint that says what would be right.
	Errorf(field, hint, format string, args ...any)
	// Proxies names the scenario's proxies.
	Proxies() []string
	// Proxy returns the proxy named name.
	Proxy(name string) (ProxyDecl, bool)
	// Processes names the processes a fault may act on: the target first,
	// then the dependencies.
	Processes() []string
	// TargetStarted says whether chaoskit starts the target, and so can
	// stop it.
	TargetStarted() bool
	// Catalog is the target's failpoints, nil when not known.
	Catalog() *inject.Catalog
}

// Env is what a run lends the actuators: the means to switch faults in
// the target, its proxies and its processes.
type Env interface {
	// EnableFailpoint and DisableFailpoint switch a failpoint through the
	// target's control endpoint, with retries; disabling without an
	// endpoint does nothing.
	EnableFailpoint(path, term string) error
	DisableFailpoint(path string) error
	// EnableProxy and DisableProxy put a fault on the run's proxies.
	EnableProxy(f netfault.Fault) error
	DisableProxy(f netfault.Fault) error
	// StartProcessFault and EndProcessFault kill, terminate, pause or
	// restart a process chaoskit started, and bring it back.
	StartProcessFault(process, action string) error
	EndProcessFault(process, action string) error
	// Proxy returns the server a source started for the proxy named name
	// (Source.Serve), nil when there is none.
	Proxy(name string) Server
	// Event records e on the run's timeline.
	Event(e timeline.Event)
}

// Actuator switches the faults of one source on and off in a run.
type Actuator interface {
	On(s Spec) error
	// Off switches s off; rollingBack is set while the run's end rolls
	// back. s may know only its Path (a failpoint an earlier run left on).
	Off(s Spec, rollingBack bool) error
	// BackAtOnce says s is over once it is on (a restart: down and up
	// again), so it is switched off right after.
	BackAtOnce(s Spec) bool
}

// Source is one source of faults.
type Source struct {
	// Name is the key a fault names its source by: point, proxy, process.
	Name string
	// Marker says the source's faults act through failpoint markers in the
	// target: they have hits to count, die with the target, and outlive
	// chaoskit, so the rollback record lists them.
	Marker bool
	// Names says whether s is one of this source's faults. The sources'
	// answers exclude each other.
	Names func(s *Spec) bool
	// Check validates s, filling in its Path, Term (and Net); false leaves
	// the fault's window unchecked.
	Check func(sc Scope, s *Spec) bool
	// Overlap reports s switched on while another fault of the same Path
	// (described by other, such as "faults[0] (0s–3s)") is on, in phase.
	Overlap func(sc Scope, s *Spec, phase, other string)
	// Actuator makes the source's actuator in a run.
	Actuator func(env Env) Actuator
	// Protocols are the proxy protocols the source serves: a proxy
	// declared with one of them is started by Serve, and its faults come
	// from this source. The TCP proxies' source, which the run starts
	// itself, names none.
	Protocols []string
	// Serve starts a proxy of one of Protocols for a run; it logs its
	// troubles to log.
	Serve func(p ProxyDecl, log io.Writer) (Server, error)
}

// Label is how a log line names s: the point and its action for a
// failpoint, the description of any other fault.
func (src *Source) Label(s Spec) string {
	if src.Marker {
		return s.Point + "=" + s.Action
	}
	return s.Term
}

var sources []*Source

// Register adds a source; each source's package calls it once, from init.
func Register(src *Source) { sources = append(sources, src) }

// Sources returns the registered sources.
func Sources() []*Source { return sources }

// Serving returns the source that serves proxies of protocol, nil when
// none does.
func Serving(protocol string) *Source {
	for _, src := range sources {
		for _, p := range src.Protocols {
			if p == protocol {
				return src
			}
		}
	}
	return nil
}

// Protocols returns the proxy protocols the sources serve, tcp first.
func Protocols() []string {
	out := []string{"tcp"}
	for _, src := range sources {
		out = append(out, src.Protocols...)
	}
	return out
}

// Of returns the source s comes from.
func Of(s *Spec) *Source {
	for _, src := range sources {
		if src.Names(s) {
			return src
		}
	}
	panic("fault: no source names the fault (is its package imported?)")
}
