package plan

import (
	"errors"
	"fmt"
	"os/user"
	"regexp"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/netfault"
)

// Dependency is a process chaoskit starts before the target and stops
// after it, in its own process group below a supervisor, as it does the
// target: a database, a cache, a stub. It is exactly one of Command (any
// program) or Postgres (initdb and postgres from Debian's postgresql
// package, set up by chaoskit).
//
// Its port is {port:NAME}, NAME being its name: the same placeholder in
// the target's argv, env and url, in other dependencies and in proxies is
// the same free loopback port. {data} in its argv and env is its data
// directory, deps/NAME in the run directory, created empty for each run.
type Dependency struct {
	// Name names the dependency in process faults, in {port:NAME} and in
	// the run directory (deps/NAME.stdout, deps/NAME.stderr). It may not
	// be "target".
	Name string `yaml:"name"`
	// Command is the program to run.
	Command *Command `yaml:"command"`
	// Postgres runs a PostgreSQL server on {port:NAME}, with a database
	// and a user both named postgres, password {password:NAME} (SCRAM), TCP
	// on 127.0.0.1 only.
	Postgres *PostgresDependency `yaml:"postgres"`
	// RunAs is the user the dependency runs as when chaoskit runs as root
	// (a server that refuses root, as postgres does); its data directory
	// is handed to that user. Ignored when chaoskit is not root, since
	// only root can change user. A Postgres dependency runs as postgres
	// by default.
	RunAs string `yaml:"run_as"`
	// Ready is how chaoskit knows the dependency is ready.
	Ready DependencyReady `yaml:"ready"`
	// StopGrace is how long it gets to exit after SIGTERM (SIGINT for
	// Postgres, its fast shutdown) before it is killed; default 3s.
	StopGrace Duration `yaml:"stop_grace"`
}

// PostgresDependency is the Postgres helper form of a dependency.
type PostgresDependency struct {
	// Args are added to the postgres command line, such as
	// ["-c", "max_connections=200"].
	Args []string `yaml:"args"`
}

// DependencyReady is a dependency's readiness check: a TCP connection to
// TCP that succeeds, or Command that exits 0, tried until Timeout (default
// 30s). Without either, a Command dependency is ready when
// 127.0.0.1:{port:NAME} accepts a connection, and a Postgres one when it
// accepts a session.
type DependencyReady struct {
	TCP     string   `yaml:"tcp"`
	Command []string `yaml:"command"`
	Timeout Duration `yaml:"timeout"`
}

// Proxy is a TCP proxy chaoskit runs in-process for the whole run, so that
// proxy faults can disturb the traffic through it. Point the target at
// Listen instead of at the dependency.
type Proxy struct {
	// Name names the proxy in faults and reports.
	Name string `yaml:"name"`
	// Listen is the loopback address it listens on; default
	// 127.0.0.1:{port:NAME}, NAME being its name.
	Listen string `yaml:"listen"`
	// Upstream is the loopback address it forwards to, such as
	// 127.0.0.1:{port:db} for a dependency named db.
	Upstream string `yaml:"upstream"`
	// Protocol is what the proxy understands: tcp (the default: bytes,
	// faulted by toxiproxy's toxics), http (HTTP/1.1 and HTTP/2 without
	// TLS: requests, faulted by method, path and header) or grpc (calls,
	// faulted by method too, aborted with a gRPC code).
	Protocol string `yaml:"protocol"`
	// DescriptorSet is a gRPC proxy's FileDescriptorSet (protoc
	// --include_imports -o FILE), relative to the scenario: the methods its
	// faults name are checked against it.
	DescriptorSet string `yaml:"descriptor_set"`

	// Methods are the descriptors read from DescriptorSet, filled in by
	// validation.
	Methods *protoregistry.Files `yaml:"-"`
}

// Decl returns p as the fault sources see it.
func (p Proxy) Decl() fault.ProxyDecl {
	protocol := p.Protocol
	if protocol == "" {
		protocol = "tcp"
	}
	return fault.ProxyDecl{Name: p.Name, Protocol: protocol, Listen: p.Listen, Upstream: p.Upstream, Methods: p.Methods}
}

// Defaults of dependencies.
const (
	defaultDependencyReady = 30 * time.Second
	// PostgresUser is the user a Postgres dependency runs as under root.
	PostgresUser = "postgres"
	// TargetProcess is the name process faults give the target.
	TargetProcess = "target"
)

// dataRef is a dependency's data directory placeholder.
const dataRef = "{data}"

var depName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// templated returns the strings of d that may hold placeholders.
func (d Dependency) templated() []string {
	out := []string{d.Ready.TCP}
	out = append(out, d.Ready.Command...)
	if d.Command != nil {
		out = append(out, d.Command.Argv...)
		for _, v := range d.Command.Env {
			out = append(out, v)
		}
	}
	if d.Postgres != nil {
		out = append(out, d.Postgres.Args...)
	}
	return out
}

// WithPorts returns a copy of d with its port placeholders and {data}
// filled.
func (d Dependency) WithPorts(ports map[string]int, data string) Dependency {
	fill := func(s string) string { return strings.ReplaceAll(FillPorts(s, ports), dataRef, data) }
	fillAll := func(ss []string) []string {
		if ss == nil {
			return nil
		}
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = fill(s)
		}
		return out
	}
	d.Ready.TCP = fill(d.Ready.TCP)
	d.Ready.Command = fillAll(d.Ready.Command)
	if d.Command != nil {
		c := *d.Command
		c.Argv = fillAll(c.Argv)
		c.Env = make(map[string]string, len(d.Command.Env))
		for k, v := range d.Command.Env {
			c.Env[k] = fill(v)
		}
		d.Command = &c
	}
	if d.Postgres != nil {
		p := *d.Postgres
		p.Args = fillAll(p.Args)
		d.Postgres = &p
	}
	return d
}

// WithPorts returns a copy of p with its placeholders filled.
func (p Proxy) WithPorts(ports map[string]int) Proxy {
	p.Listen, p.Upstream = FillPorts(p.Listen, ports), FillPorts(p.Upstream, ports)
	return p
}

// PortNames returns every port placeholder name the scenario uses, in its
// target (the demo's args included), dependencies and proxies, sorted;
// {port} is named "". Each dependency's and proxy's own name is among
// them.
func (sc *Scenario) PortNames() []string {
	seen := map[string]bool{}
	for _, n := range sc.Target.PortNames() {
		seen[n] = true
	}
	var strs []string
	if sc.Target.Demo != nil {
		strs = append(strs, sc.Target.Demo.Args...)
	}
	for _, d := range sc.Dependencies {
		seen[d.Name] = true
		strs = append(strs, d.templated()...)
	}
	for _, p := range sc.Proxies {
		seen[p.Name] = true
		strs = append(strs, p.Listen, p.Upstream)
	}
	for _, s := range strs {
		for _, m := range portRef.FindAllStringSubmatch(s, -1) {
			seen[m[1]] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for n := range seen {
			if !yield(n) {
				return
			}
		}
	})
}

// validateDeps checks the dependencies and proxies and fills in their
// defaults.
func (v *validator) validateDeps() {
	sc := v.sc
	names := map[string]string{}
	claim := func(at, name, what string) bool {
		switch {
		case !depName.MatchString(name):
			v.errorf(at+".name", "letters, digits, '_' and '-', such as postgres", "%s name %q cannot be used", what, name)
			return false
		case name == TargetProcess:
			v.errorf(at+".name", "give it another name: process faults call the target \"target\"", "%s name %q is taken by the target", what, name)
			return false
		case names[name] != "":
			v.errorf(at+".name", "give each dependency and proxy its own name: the name is also its {port:NAME}", "%s name %q is used by %s already", what, name, names[name])
			return false
		}
		names[name] = what + " " + name
		return true
	}
	for i := range sc.Dependencies {
		d := &sc.Dependencies[i]
		at := fmt.Sprintf("$.dependencies[%d]", i)
		claim(at, d.Name, "dependency")
		switch {
		case (d.Command == nil) == (d.Postgres == nil):
			v.errorf(at, "write command: {argv: [redis-server, --port, \"{port:"+d.Name+"}\"]} or postgres: {}", "dependency %q needs exactly one of command or postgres", d.Name)
		case d.Command != nil:
			c := d.Command
			if len(c.Argv) == 0 || strings.TrimSpace(c.Argv[0]) == "" {
				v.errorf(at+".command.argv", "write argv: [redis-server, --port, \"{port:"+d.Name+"}\", --save, \"\"]", "dependency %q has no argv", d.Name)
			}
			v.checkNUL(at+".command.argv", c.Argv...)
			c.Dir = v.path(c.Dir)
			if c.Dir == "" {
				c.Dir = v.dir
			}
			for k, val := range c.Env {
				if k == "" || strings.ContainsAny(k, "= \x00") {
					v.errorf(at+".command.env", "", "environment variable name %q is not valid", k)
				}
				v.checkNUL(at+".command.env."+k, val)
			}
			if d.Ready.TCP == "" && len(d.Ready.Command) == 0 && !d.usesOwnPort() {
				v.errorf(at+".ready", "pass \"{port:"+d.Name+"}\" to the command, or write ready: {tcp: \"127.0.0.1:PORT\"} or ready: {command: [...]}", "chaoskit cannot tell when dependency %q is ready", d.Name)
			}
		case d.Postgres != nil:
			v.checkNUL(at+".postgres.args", d.Postgres.Args...)
			v.checkPostgresArgs(at+".postgres.args", d.Name, d.Postgres.Args)
			if d.RunAs == "" {
				d.RunAs = PostgresUser
			}
		}
		if d.RunAs != "" {
			if _, err := user.Lookup(d.RunAs); err != nil {
				v.errorf(at+".run_as", "name a user of this machine (Debian's postgresql package creates postgres)", "run_as: no user %q: %v", d.RunAs, err)
			}
		}
		if d.Ready.TCP != "" && len(d.Ready.Command) > 0 {
			v.errorf(at+".ready", "keep tcp or command", "ready has both tcp and command")
		}
		if d.Ready.TCP != "" {
			v.checkReach(at+".ready.tcp", "", fillAny(d.Ready.TCP))
		}
		v.checkNUL(at+".ready.command", d.Ready.Command...)
		if d.Ready.Timeout == 0 {
			d.Ready.Timeout = Duration(defaultDependencyReady)
		}
		if d.StopGrace == 0 {
			d.StopGrace = Duration(DefaultStopGrace)
		}
	}
	for i := range sc.Proxies {
		p := &sc.Proxies[i]
		at := fmt.Sprintf("$.proxies[%d]", i)
		if !claim(at, p.Name, "proxy") {
			continue
		}
		if p.Listen == "" {
			p.Listen = "127.0.0.1:{port:" + p.Name + "}"
		}
		if p.Upstream == "" {
			v.errorf(at+".upstream", "write upstream: \"127.0.0.1:{port:NAME}\" with the name of a dependency, or a loopback host:port", "proxy %q has no upstream", p.Name)
			continue
		}
		np := netfault.Proxy{Name: p.Name, Listen: fillAny(p.Listen), Upstream: fillAny(p.Upstream)}
		var fe *netfault.FieldError
		if err := np.ValidateFor(v.listed.Hosts()); errors.As(err, &fe) {
			v.errorf(at+"."+fe.Field, fe.Fix, "proxy %q: %s", p.Name, fe.Problem)
		}
		if protocols := fault.Protocols(); p.Protocol != "" && !slices.Contains(protocols, p.Protocol) {
			v.errorf(at+".protocol", suggest.Hint(p.Protocol, protocols), "proxy %q: unknown protocol %q", p.Name, p.Protocol)
		}
		if p.DescriptorSet != "" {
			if p.Protocol != "grpc" {
				v.errorf(at+".descriptor_set", "declare the proxy with protocol: grpc, or remove descriptor_set", "proxy %q speaks %s: a descriptor set is for gRPC", p.Name, p.Decl().Protocol)
			} else if !v.opts.SkipBodyFiles {
				p.DescriptorSet, p.Methods = v.readDescriptorSet(at+".descriptor_set", p.DescriptorSet)
			}
		}
	}
}

// fillAny fills every port placeholder with a port, for checks of the
// address around it.
func fillAny(s string) string { return portRef.ReplaceAllString(s, "1") }

// usesOwnPort says whether a command dependency is given its own port.
func (d Dependency) usesOwnPort() bool {
	for _, s := range d.templated() {
		for _, m := range portRef.FindAllStringSubmatch(s, -1) {
			if m[1] == d.Name {
				return true
			}
		}
	}
	return false
}
