package plan

import (
	"fmt"
	"github.com/chaoskit/chaoskit/internal/reach"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/netfault"
)

// Scenario is one chaos experiment: a target, the load to drive at it, the
// phases with the faults each switches on, and the contracts that must hold.
// See docs/scenarios.md for every field.
type Scenario struct {
	Name string `yaml:"name"`
	// Include names partial scenarios whose fields this file's own
	// override: shared targets, loads, contracts.
	Include Includes `yaml:"include"`
	// IncludeDirs names directories, relative to this file, that Include
	// may also read from; by default it reads only from this file's own
	// directory tree.
	IncludeDirs []string `yaml:"include_dirs"`
	Description string   `yaml:"description"`
	// Vars are the values ${name} stands for anywhere in the file; --var
	// name=value overrides them.
	Vars map[string]string `yaml:"vars"`
	// AllowHosts are the hosts beyond loopback the scenario may send
	// traffic to: host names, IP addresses and CIDR prefixes, such as
	// [staging.internal, 10.20.0.0/16]. Each must also be given on the
	// command (--allow-host HOST), consent from the scenario and from who
	// runs it; every other address must be on loopback. Servers chaoskit
	// starts (a target command, dependencies, proxies) listen on loopback
	// whatever it says.
	AllowHosts []string `yaml:"allow_hosts"`
	Target     Target   `yaml:"target"`
	// Dependencies are processes chaoskit starts before the target (a
	// database, a cache) and stops after it; Proxies are TCP proxies it
	// runs in-process between the target and a dependency, for proxy
	// faults. See deps.go.
	Dependencies []Dependency `yaml:"dependencies"`
	Proxies      []Proxy      `yaml:"proxies"`
	// Setup are steps run in order before the first phase: SQL and
	// Redis commands against dependencies, HTTP requests to the target,
	// with the values they capture. See setup.go.
	Setup []SetupStep `yaml:"setup"`
	// Teardown are steps of the same kinds run in order after the last
	// phase, and when the run stops early, before the target and the
	// dependencies are stopped. See setup.go.
	Teardown []SetupStep `yaml:"teardown"`
	// Probes are figures read from dependencies or the target as
	// evidence for contracts: probe("NAME"). See probes.go.
	Probes []Probe `yaml:"probes"`
	// Prometheus is the server the contracts' promql(...) forms ask. See
	// prometheus.go.
	Prometheus *PrometheusServer `yaml:"prometheus"`
	Load       Load              `yaml:"load"`
	Phases     []Phase           `yaml:"phases"`
	Contracts  []Contract        `yaml:"contracts"`
	// Classify sorts requests into classes for the contracts; Writes says
	// which requests are writes and how to read them back.
	Classify *Classify `yaml:"classify"`
	Writes   []Write   `yaml:"writes"`
	// Verify are post-recovery invariants checked by requests chaoskit
	// sends after the last phase (see Verify).
	Verify []Verify `yaml:"verify"`
	// Fuzz makes this a fuzz scenario: the fault space chaoskit fuzz and
	// chaoskit explore draw phases from (see FaultSpace).
	Fuzz *FaultSpace `yaml:"fuzz"`

	// File is where the scenario was loaded from (not part of the YAML).
	File string `yaml:"-"`
	// Source is the file's text as loaded, before ${name} substitution.
	Source []byte `yaml:"-"`
	// Values are the variable values the scenario was loaded with: its vars
	// with every --var applied.
	Values map[string]string `yaml:"-"`
	// Included are the files the scenario includes, in order, as read.
	Included []IncludedFile `yaml:"-"`
	// Reach is where the run may send traffic: loopback, and the hosts of
	// AllowHosts that the command consented to (Options.AllowHosts). Nil
	// is loopback only.
	Reach *reach.Policy `yaml:"-"`

	// names lists every variable the file declares or uses.
	names map[string]bool
	// conventions are the target profile's, kept from loading so that a
	// target bound later (chaostest, fuzzing in process) keeps them.
	conventions Conventions
}

// Target says which service to attack: exactly one of Demo, Command (with
// URL) or URL alone.
type Target struct {
	// Demo starts this chaoskit binary's bundled demo service.
	Demo *DemoTarget `yaml:"demo"`
	// Command starts the service; chaoskit stops it at the end. URL is then
	// where it listens, usually with a {port} placeholder.
	Command *Command `yaml:"command"`
	// URL is the service's base URL. Without Command the service is already
	// running and chaoskit neither starts nor stops it.
	URL string `yaml:"url"`
	// Failpoints is the service's failpoint control endpoint. For a Command
	// target it may be left out: chaoskit then picks a free loopback port.
	// A Command is given the address and the run's token in
	// CHAOSKIT_FAILPOINTS_HTTP and CHAOSKIT_FAILPOINTS_TOKEN.
	Failpoints string `yaml:"failpoints"`
	// Ready is how chaoskit knows the service is ready.
	Ready Ready `yaml:"ready"`
	// State, when set, is sampled during the run and recorded on the
	// timeline.
	State *StateProbe `yaml:"state"`
	// Metrics, when set, is the service's Prometheus metrics endpoint,
	// sampled during the run and recorded on the timeline, for the
	// contracts that read metrics.
	Metrics *MetricsProbe `yaml:"metrics"`
	// Hits is the path of the service's fault-hit report (inject.HitsHandler);
	// default /debug/chaoskit/faults.
	Hits string `yaml:"hits"`
	// Points lists the service's failpoints (full paths) when chaoskit cannot
	// scan its source.
	Points []string `yaml:"points"`
	// Source is the directory of the service's Go module, relative to the
	// scenario file; Packages the patterns scanned there (default ./...).
	// Fault points are checked against the failpoint markers found there.
	Source   string   `yaml:"source"`
	Packages []string `yaml:"packages"`
	// AllowExit makes the target's exit during the run an event on the
	// timeline rather than an infrastructure error: for scenarios whose
	// contracts judge what happens when the service dies.
	AllowExit bool `yaml:"allow_exit"`
	// StopGrace is how long the target gets to exit after SIGTERM before it
	// is killed; default 3s.
	StopGrace Duration `yaml:"stop_grace"`
	// TLS, for an https:// url, is how chaoskit checks the target's
	// certificate (see TLS).
	TLS *TLS `yaml:"tls"`
	// GRPC is where the service serves gRPC, for grpc: requests (see
	// GRPCTarget, docs/grpc.md).
	GRPC *GRPCTarget `yaml:"grpc"`
}

// DemoTarget starts `chaoskit demo serve` with Args.
type DemoTarget struct {
	Args []string `yaml:"args"`
}

// Command is a service chaoskit starts: Argv[0] is the program (a path, or a
// name looked up in PATH), Env is added to chaoskit's environment, Dir is
// the working directory, relative to the scenario file. {port} and
// {port:NAME} in Argv, Env values and the target's URL and Failpoints are
// filled with free loopback ports.
type Command struct {
	Argv []string          `yaml:"argv"`
	Env  map[string]string `yaml:"env"`
	Dir  string            `yaml:"dir"`
}

// Ready is the readiness probe: GET Path until it answers Status, for at
// most Timeout. Defaults: /healthz, 200, 15s.
type Ready struct {
	Path    string   `yaml:"path"`
	Status  int      `yaml:"status"`
	Timeout Duration `yaml:"timeout"`
}

// StateProbe samples a JSON document describing the service's state (such as
// breaker states) every Interval (default 100ms) during the run. Each sample
// becomes a state event on the timeline.
type StateProbe struct {
	Path     string   `yaml:"path"`
	Interval Duration `yaml:"interval"`
}

// MetricsProbe samples a Prometheus metrics endpoint (the text exposition
// format) every Interval (default 100ms) during the run. Each sample
// becomes a metrics event on the timeline holding the families named in
// Names; left out, Names are those the scenario's contracts read.
type MetricsProbe struct {
	Path     string   `yaml:"path"`
	Interval Duration `yaml:"interval"`
	Names    []string `yaml:"names"`
}

// Load describes the traffic chaoskit drives at the target.
type Load struct {
	// Rate is requests per period: "200/s", "12/100ms", "50" (per second).
	// Pacer, instead of Rate, makes the rate change over each phase.
	Rate  Rate   `yaml:"rate"`
	Pacer *Pacer `yaml:"pacer"`
	// Timeout bounds each request; default 2s.
	Timeout Duration `yaml:"timeout"`
	// Workers is the initial number of concurrent senders; default 10.
	// MaxWorkers caps them; default 500.
	Workers    int `yaml:"workers"`
	MaxWorkers int `yaml:"max_workers"`
	// Connections caps the open connections to the target; 0 means no cap.
	Connections int `yaml:"connections"`
	// HTTP2 speaks HTTP/2 (h2c, without TLS, to http:// targets) when true;
	// default HTTP/1.1.
	HTTP2 *bool `yaml:"http2"`
	// Seed makes random path choices repeatable; 0 picks one per run.
	Seed int64 `yaml:"seed"`
	// Requests are the requests to send, chosen by weight.
	Requests []RequestSpec `yaml:"requests"`
}

// Pacer shapes the request rate over a phase; exactly one field is set.
type Pacer struct {
	// Linear ramps from From to To over each phase.
	Linear *LinearPacer `yaml:"linear"`
	// Sine oscillates around Mean by Amplitude with Period.
	Sine *SinePacer `yaml:"sine"`
	// Steps holds each rate for its duration; the last holds to the end.
	Steps []Step `yaml:"steps"`
}

// LinearPacer ramps the rate linearly over a phase.
type LinearPacer struct {
	From Rate `yaml:"from"`
	To   Rate `yaml:"to"`
}

// SinePacer makes the rate a sine wave. Start is where on the wave a phase
// starts: mean-up (default), peak, mean-down or trough.
type SinePacer struct {
	Mean      Rate     `yaml:"mean"`
	Amplitude Rate     `yaml:"amplitude"`
	Period    Duration `yaml:"period"`
	Start     string   `yaml:"start"`
}

// Step is one stretch of a steps pacer.
type Step struct {
	Rate Rate     `yaml:"rate"`
	For  Duration `yaml:"for"`
}

// RequestSpec is one kind of request. Path, header values and Body may hold
// templates: {1..50} and {a|b|c} walk their values in turn, {random:1..50}
// and {random:a|b|c} pick one at random, {seq} counts requests (1, 2, ...).
type RequestSpec struct {
	// Name names the template, for contracts to select its requests
	// (requests: {template: NAME}) whatever became of them.
	Name    string            `yaml:"name"`
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	// Body is sent inline; BodyFile names a file (relative to the scenario)
	// whose content is sent. At most one of them.
	Body     string `yaml:"body"`
	BodyFile string `yaml:"body_file"`
	// Weight is this request's share of the load relative to the others;
	// default 1.
	Weight int `yaml:"weight"`
	// Tags label the request on the timeline, for contracts to select.
	Tags []string `yaml:"tags"`
	// GRPC makes the request a unary gRPC call to target.grpc instead of
	// an HTTP request: no method, path, headers or body then (see
	// GRPCCall, docs/grpc.md).
	GRPC *GRPCCall `yaml:"grpc"`
	// Chain makes the template a chain of HTTP requests sent in order,
	// a later one using what an earlier one captured (create, read,
	// delete): the template then has a name and no method, path,
	// headers or body of its own (see ChainStep, docs/scenarios.md).
	Chain []ChainStep `yaml:"chain"`
}

// ChainStep is one request of a chain. Each arrival of the phase's pacer
// starts one iteration of the chain; its steps go out in order, each
// after the answer to the one before and Think after it. A step may
// capture values from its answer for the later steps of the same
// iteration ({capture.NAME}); a step that needs a value an earlier step
// could not capture is not sent, and the iteration stops there.
type ChainStep struct {
	// Name names the step; its requests carry the template name
	// CHAIN/STEP (link-lifecycle/read). Default: its number, from 1.
	Name    string            `yaml:"name"`
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	// Tags label the step's requests, with the chain's own tags.
	Tags []string `yaml:"tags"`
	// Status lists the statuses whose answers captures are taken from;
	// default 2xx. Another answer captures nothing.
	Status []Status `yaml:"status"`
	// Capture maps a name to what it takes from the answer: {json.PATH},
	// {header.NAME} or {regexp.PATTERN}, as a setup step's capture does.
	Capture map[string]string `yaml:"capture"`
	// Think is how long the iteration waits after the answer to the step
	// before, before it sends this one; default 0. It never outlasts the
	// phase: an iteration the phase's end cuts sends nothing more.
	Think Duration `yaml:"think"`
}

// Phase is a stretch of the run with its own set of faults and, optionally,
// its own load.
type Phase struct {
	Name     string   `yaml:"name"`
	Duration Duration `yaml:"duration"`
	// Load overrides the scenario's load for this phase: each field set here
	// replaces the scenario's (rate or pacer, requests, timeout, ...).
	Load   *Load   `yaml:"load"`
	Faults []Fault `yaml:"faults"`

	// Effective is the load this phase runs, filled in by validation.
	Effective Load `yaml:"-"`
}

// HasPointFaults says whether the phase switches a failpoint fault.
func (p Phase) HasPointFaults() bool {
	for _, f := range p.Faults {
		if f.Source().Marker {
			return true
		}
	}
	return false
}

// Fault is a fault switched on during a phase: from After (default: the
// phase's start) for For (default: the rest of the phase). It comes from
// one of three sources, exactly one of which it names: Point, a failpoint
// marker inside the service; Proxy, a proxy of the scenario's, whose
// traffic it disturbs (see ProxyFault); Process, the target or a
// dependency, which it kills, pauses, terminates or restarts (see
// ProcessActions).
type Fault struct {
	// Point names the failpoint: its full path or a unique suffix of it.
	Point string `yaml:"point"`
	// Proxy names one of the scenario's proxies.
	Proxy string `yaml:"proxy"`
	// Process is "target" or the name of a dependency.
	Process string `yaml:"process"`
	// Action is, for a failpoint, timeout, error, latency, panic, status,
	// grpc or term; for a TCP proxy, a netfault kind (latency, bandwidth,
	// slow_close, timeout, reset_peer, slicer, limit_data, down); for an
	// HTTP or gRPC proxy, abort, delay, drop or body; for a process, kill,
	// terminate, pause or restart.
	Action      string   `yaml:"action"`
	Value       string   `yaml:"value"`
	Probability float64  `yaml:"probability"`
	Count       int      `yaml:"count"`
	After       Duration `yaml:"after"`
	For         Duration `yaml:"for"`
	// The settings of a proxy fault, as netfault.Fault names them.
	ProxyFault `yaml:",inline"`
	// Match restricts a fault on an HTTP or gRPC proxy to the requests it
	// names (method, path pattern, headers, gRPC method).
	Match *fault.Match `yaml:"match"`
	// Distribution is the delay distribution of a latency fault, on a
	// failpoint (instead of its value) or on a proxy (instead of latency
	// and jitter).
	Distribution *Distribution `yaml:"distribution"`

	// Protocol is the protocol of the proxy the fault names, filled in by
	// validation before its source is chosen.
	Protocol string `yaml:"-"`

	// Path is what the fault acts on, filled in by validation: the
	// failpoint's full path, "proxy/NAME" or "process/NAME". It is the
	// Point of the fault's events on the timeline.
	Path string `yaml:"-"`
	// Term is the failpoint term, or for a proxy or process fault its
	// description ("proxy postgres latency 300ms ±50ms", "process demo
	// kill"), filled in by validation.
	Term string `yaml:"-"`
	// Net is the proxy fault as netfault runs it, filled in by validation.
	Net *netfault.Fault `yaml:"-"`
	// Dist is Distribution in package dist's text form, its histogram
	// file read, filled in by validation.
	Dist string `yaml:"-"`
}

// Distribution is a latency fault's delay distribution, as a scenario
// writes it. Type says which settings it reads:
//
//	fixed:     value
//	uniform:   min, max
//	normal:    mean, stddev (draws below zero are zero)
//	lognormal: median, p99 (p99 above the median)
//	histogram: file, relative to the scenario file: one bucket a line, its
//	           upper bound and its weight ("10ms 90"); delays are drawn
//	           uniformly inside a bucket, each bucket as often as its
//	           weight says. At most 256 buckets and 64 KiB.
type Distribution struct {
	Type   string   `yaml:"type"`
	Value  Duration `yaml:"value"`
	Min    Duration `yaml:"min"`
	Max    Duration `yaml:"max"`
	Mean   Duration `yaml:"mean"`
	Stddev Duration `yaml:"stddev"`
	Median Duration `yaml:"median"`
	P99    Duration `yaml:"p99"`
	File   string   `yaml:"file"`
}

// ProxyFault holds the settings of a fault on a proxy; which ones a kind
// reads is said by netfault's Kind constants. Durations are whole
// milliseconds, Delay of a slicer whole microseconds.
type ProxyFault struct {
	// Direction is downstream (from the dependency to the target, the
	// default) or upstream.
	Direction string `yaml:"direction"`
	// Latency and Jitter: latency.
	Latency Duration `yaml:"latency"`
	Jitter  Duration `yaml:"jitter"`
	// Rate is bandwidth's cap, in kilobytes a second.
	Rate int64 `yaml:"rate"`
	// Delay: slow_close's delay of the close, slicer's between slices.
	Delay Duration `yaml:"delay"`
	// Timeout: when timeout closes the connections it holds (0: never),
	// when reset_peer resets a connection after data comes (0: at once).
	Timeout Duration `yaml:"timeout"`
	// Bytes is how much limit_data lets through.
	Bytes int64 `yaml:"bytes"`
	// AverageSize and SizeVariation are slicer's slices, in bytes.
	AverageSize   int `yaml:"average_size"`
	SizeVariation int `yaml:"size_variation"`
}

// Window returns when the fault is on, as offsets from its phase's start.
func (f Fault) Window(phase time.Duration) (on, off time.Duration) {
	on, off = f.After.D(), phase
	if f.For > 0 {
		off = on + f.For.D()
	}
	return on, off
}

// Duration is a time.Duration written as "500ms", "3s", "1m30s".
type Duration time.Duration

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (d *Duration) UnmarshalYAML(n ast.Node) error {
	s, ok := scalar(n)
	if !ok {
		return errAt(n, "write it like 500ms or 3s", "a duration must be a plain value")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		hint := "write it like 500ms or 3s"
		if _, e := strconv.ParseFloat(s, 64); e == nil {
			hint = fmt.Sprintf("add a unit: %ss or %sms", s, s)
		}
		return errAt(n, hint, "bad duration %q", s)
	}
	if v < 0 {
		return errAt(n, "a duration is 0 or more, such as 20ms", "duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Rate is a request rate: Freq requests every Per.
type Rate struct {
	Freq int
	Per  time.Duration
}

// PerSecond returns the rate in requests per second.
func (r Rate) PerSecond() float64 {
	if r.Per <= 0 {
		return 0
	}
	return float64(r.Freq) / r.Per.Seconds()
}

// IsZero reports whether no rate was given.
func (r Rate) IsZero() bool { return r.Freq == 0 }

func (r Rate) String() string {
	if r.Per == time.Second {
		return fmt.Sprintf("%d/s", r.Freq)
	}
	return fmt.Sprintf("%d/%s", r.Freq, r.Per)
}

// Scale returns the rate multiplied by f (> 0), keeping at least one request
// per period: 200/s scaled by 0.5 is 100/s, 1/s scaled by 0.5 is 1/2s.
func (r Rate) Scale(f float64) Rate {
	if r.Freq == 0 || f == 1 || f <= 0 {
		return r
	}
	freq := float64(r.Freq) * f
	if freq >= 1 {
		return Rate{Freq: int(math.Round(freq)), Per: r.Per}
	}
	return Rate{Freq: 1, Per: time.Duration(float64(r.Per) / freq)}
}

// ParseRate parses "200/s", "12/100ms", "3/1m" or a bare "50" (per second).
func ParseRate(s string) (Rate, error) {
	num, per, found := strings.Cut(strings.TrimSpace(s), "/")
	freq, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || freq <= 0 {
		return Rate{}, fmt.Errorf("bad rate %q: the count must be a positive integer", s)
	}
	r := Rate{Freq: freq, Per: time.Second}
	if found {
		per = strings.TrimSpace(per)
		switch per {
		case "s":
			r.Per = time.Second
		case "ms":
			r.Per = time.Millisecond
		case "m", "min":
			r.Per = time.Minute
		default:
			if len(per) > 0 && per[0] >= 'a' && per[0] <= 'z' {
				per = "1" + per
			}
			d, err := time.ParseDuration(per)
			if err != nil || d <= 0 {
				return Rate{}, fmt.Errorf("bad rate %q: the period must be a duration such as s, 100ms or 1m", s)
			}
			r.Per = d
		}
	}
	return r, nil
}

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (r *Rate) UnmarshalYAML(n ast.Node) error {
	s, ok := scalar(n)
	if !ok {
		return errAt(n, "write it like 200/s or 12/100ms", "a rate must be a plain value")
	}
	v, err := ParseRate(s)
	if err != nil {
		return errAt(n, "write it like 200/s or 12/100ms", "%v", err)
	}
	*r = v
	return nil
}

// scalar returns the text of a scalar node.
func scalar(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.IntegerNode, *ast.FloatNode:
		return v.GetToken().Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	return "", false
}

// IncludedFile is one file a scenario includes.
type IncludedFile struct {
	// Spec is the path as the include field writes it.
	Spec string
	// Path is where it was read from.
	Path string
	// Data is its text before ${name} substitution.
	Data []byte
}

// Bind attaches a concrete service to the loaded scenario: t says where
// it listens, how it is started and where its control endpoint is (Demo,
// Command, URL, Failpoints); what the scenario says of its target besides
// (readiness, state, metrics and hits probes, points, source, exit and stop
// settings) stays. What loading derived (the compiled contracts, the
// classification with the target profile's conventions, the headers to
// record) stays as it is. chaostest and in-process fuzzing bind the
// service of the test.
func (sc *Scenario) Bind(t Target) {
	sc.Target.Demo, sc.Target.Command, sc.Target.URL, sc.Target.Failpoints = t.Demo, t.Command, t.URL, t.Failpoints
}
