package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/suggest"
)

// GRPCTarget is where the target serves gRPC, for the load's grpc:
// requests, and how chaoskit learns the service's methods and messages.
type GRPCTarget struct {
	// Address is the gRPC server's host:port, on loopback, with {port} and
	// {port:NAME} placeholders as in url. It may be the same address as
	// url when the service serves both on one port.
	Address string `yaml:"address"`
	// DescriptorSet names a file holding a FileDescriptorSet (what
	// `protoc --include_imports -o FILE` writes), relative to the scenario.
	// Without it chaoskit asks the running server for the descriptors by
	// server reflection (grpc.reflection.v1).
	DescriptorSet string `yaml:"descriptor_set"`
	// Health is the service name a target without url is asked about by
	// the standard health protocol (grpc.health.v1.Health/Check) until it
	// answers SERVING, within target.ready.timeout; default "", the
	// server as a whole. A server that does not serve the health protocol
	// (it answers UNIMPLEMENTED) is ready once it accepts a TCP
	// connection. A target with url is ready by its HTTP check instead.
	Health string `yaml:"health"`
	// TLS makes chaoskit speak TLS to Address, trusting what target.tls
	// says: the CA file it names, or the certificate it generates for a
	// target chaoskit starts, checked against tls.server_name or else the
	// address's host. The check is never skipped.
	TLS bool `yaml:"tls"`

	// Files are the descriptors read from DescriptorSet, filled in by
	// validation; nil when the server is asked by reflection.
	Files *protoregistry.Files `yaml:"-"`
}

// GRPCCall is a unary gRPC call, the grpc: of a request template.
type GRPCCall struct {
	// Method is the full method name, package.Service/Method.
	Method string `yaml:"method"`
	// Message is the request message: a mapping in the scenario, or a
	// string of JSON, in protobuf's JSON form. Its strings may hold the
	// templates an HTTP body holds ({1..50}, {random:a|b}, {seq},
	// {capture.NAME}).
	Message GRPCMessage `yaml:"message"`
	// Metadata is sent with the call; its values may hold templates.
	Metadata map[string]string `yaml:"metadata"`
	// Deadline is the call's deadline, sent to the server in grpc-timeout;
	// default the load's timeout.
	Deadline Duration `yaml:"deadline"`

	// MethodAt and MessageAt are where Method and Message are written, for
	// the errors of a check made once the server's descriptors are known
	// (CheckGRPC).
	MethodAt  contract.Position `yaml:"-"`
	MessageAt contract.Position `yaml:"-"`
}

// Path is the call's HTTP/2 path, /package.Service/Method: the path a
// request of it has on the timeline.
func (c *GRPCCall) Path() string { return "/" + c.Method }

// GRPCMessage is a request message as JSON text. In YAML it is a mapping
// (turned into JSON) or a string that holds JSON.
type GRPCMessage string

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (m *GRPCMessage) UnmarshalYAML(n ast.Node) error {
	if s, ok := scalar(n); ok {
		if _, isStr := n.(*ast.StringNode); isStr || n.Type() == ast.LiteralType {
			*m = GRPCMessage(s)
			return nil
		}
		return errAt(n, `write the message as a mapping, such as {id: "{1..50}"}`, "a message must be a mapping or a string of JSON, not %q", s)
	}
	if n.Type() == ast.NullType {
		*m = ""
		return nil
	}
	var v any
	if err := yaml.NodeToValue(n, &v); err != nil {
		return errAt(n, "", "cannot read the message: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return errAt(n, `write the message as a mapping, such as {id: "{1..50}"}`, "a message must be a mapping")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errAt(n, "", "cannot write the message as JSON: %v", err)
	}
	*m = GRPCMessage(b)
	return nil
}

// GRPCOnly says whether the target is a gRPC service with no HTTP url:
// it is ready by the gRPC health protocol, and nothing is sent to it over
// HTTP.
func (t *Target) GRPCOnly() bool { return t.GRPC != nil && t.URL == "" && t.Demo == nil }

// validateGRPCOnly refuses, where it is written, what needs an HTTP
// target in a scenario whose target has no url: HTTP requests and
// chains in the load, HTTP setup, teardown and probe steps, write
// read-backs, and the state and metrics endpoints.
func (v *validator) validateGRPCOnly() {
	sc := v.sc
	if !sc.Target.GRPCOnly() {
		return
	}
	const hint = "add target.url, where the service serves HTTP, or remove it: a gRPC-only target is sent gRPC calls only"
	refuse := func(at, what string) {
		v.errorf(at, hint, "%s needs an HTTP target, and target has no url", what)
	}
	loads := sc.loadsAt()
	for _, l := range loads {
		for j, r := range l.l.Requests {
			switch {
			case len(r.Chain) > 0:
				refuse(fmt.Sprintf("%s.requests[%d].chain", l.at, j), "a chain of HTTP requests")
			case r.GRPC == nil:
				refuse(fmt.Sprintf("%s.requests[%d]", l.at, j), "an HTTP request")
			}
		}
	}
	for _, steps := range []struct {
		section string
		steps   []SetupStep
	}{{"setup", sc.Setup}, {"teardown", sc.Teardown}} {
		for i := range steps.steps {
			if s := &steps.steps[i]; s.Kind() == StepHTTP && s.HTTP != "" {
				refuse(fmt.Sprintf("$.%s[%d].http", steps.section, i), fmt.Sprintf("%s step %q", steps.section, s.Name))
			}
		}
	}
	for i := range sc.Probes {
		if sc.Probes[i].HTTP != "" {
			refuse(fmt.Sprintf("$.probes[%d].http", i), fmt.Sprintf("probe %q", sc.Probes[i].Name))
		}
	}
	if len(sc.Writes) > 0 {
		refuse("$.writes", "reading writes back")
	}
	if len(sc.Verify) > 0 {
		refuse("$.verify", "verification requests")
	}
	if sc.Target.State != nil {
		refuse("$.target.state", "the state endpoint")
	}
	if sc.Target.Metrics != nil {
		refuse("$.target.metrics", "the metrics endpoint")
	}
}

// MaxDescriptorSet bounds the descriptor set file a scenario names.
const MaxDescriptorSet = 16 << 20

// grpcMethod is what a method name may look like: package.Service/Method.
var grpcMethod = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*/[A-Za-z_][A-Za-z0-9_]*$`)

// metadataKey is what a metadata key may be: gRPC's header names, in
// lower case.
var metadataKey = regexp.MustCompile(`^[0-9a-z_.-]+$`)

// validateGRPCTarget checks target.grpc and reads its descriptor set.
func (v *validator) validateGRPCTarget() {
	g := v.sc.Target.GRPC
	if g == nil {
		return
	}
	v.checkNUL("$.target.grpc.health", g.Health)
	if v.sc.Target.Demo != nil {
		v.errorf("$.target.grpc", "load a gRPC service with target.command or target.url", "the demo target serves no gRPC for load")
	}
	if g.Address == "" {
		v.errorf("$.target.grpc", `add address: "127.0.0.1:{port:grpc}"`, "target.grpc has no address")
	} else if strings.Contains(g.Address, "://") {
		v.errorf("$.target.grpc.address", "write host:port, such as 127.0.0.1:{port:grpc}", "grpc address %q is a URL, not host:port", g.Address)
	} else if addr := FillPorts(g.Address, onePorts(v.sc.Target)); v.sc.Target.Command == nil {
		v.checkReach("$.target.grpc.address", "", addr)
	} else if err := CheckLoopback(addr); err != nil {
		v.errorf("$.target.grpc.address", "a service chaoskit starts listens on loopback (127.0.0.0/8, ::1)", "%v", err)
	}
	if g.DescriptorSet == "" || v.opts.SkipBodyFiles {
		return
	}
	g.DescriptorSet, g.Files = v.readDescriptorSet("$.target.grpc.descriptor_set", g.DescriptorSet)
}

// readDescriptorSet reads the descriptor set file named at at: its path
// from the scenario's directory and its descriptors, nil when it cannot be
// read (reported).
func (v *validator) readDescriptorSet(at, file string) (string, *protoregistry.Files) {
	name := v.path(file)
	data, err := readBoundedScenario(name, MaxDescriptorSet)
	if err != nil {
		v.errorf(at, "write it with protoc --include_imports -o FILE; the path is relative to the scenario file", "cannot read descriptor_set: %v", err)
		return name, nil
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(data, &set); err != nil {
		v.errorf(at, "write it with protoc --include_imports -o FILE", "descriptor_set %s is not a FileDescriptorSet: %v", name, err)
		return name, nil
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		v.errorf(at, "write it with protoc --include_imports -o FILE, so that it holds the files it imports", "descriptor_set %s: %v", name, err)
		return name, nil
	}
	return name, files
}

// onePorts gives each port placeholder of t the port 1, for checking the
// addresses that hold them.
func onePorts(t Target) map[string]int {
	ports := map[string]int{}
	for _, n := range t.PortNames() {
		ports[n] = 1
	}
	return ports
}

// validateGRPCRequest checks a request template's grpc: call; the method
// and the message are checked against the descriptors when the scenario
// names a descriptor set, else when the run has asked the server.
func (v *validator) validateGRPCRequest(at string, r *RequestSpec) {
	c := r.GRPC
	at += ".grpc"
	c.MethodAt.File, c.MethodAt.Line, c.MethodAt.Column = v.locate(at + ".method")
	c.MessageAt.File, c.MessageAt.Line, c.MessageAt.Column = v.locate(at + ".message")
	for _, f := range []struct {
		name string
		set  bool
	}{{"method", r.Method != "" && r.Method != "POST"}, {"path", r.Path != ""}, {"headers", len(r.Headers) > 0}, {"body", r.Body != ""}, {"body_file", r.BodyFile != ""}} {
		if f.set {
			hint := "a grpc: request takes method, message, metadata and deadline in grpc:"
			if f.name == "headers" {
				hint = "send them as grpc.metadata"
			}
			v.errorf(strings.TrimSuffix(at, ".grpc")+"."+f.name, hint, "a grpc: request has no %s", f.name)
		}
	}
	r.Method = "POST"
	if v.sc.Target.GRPC == nil {
		v.errorf(at, `add target.grpc: {address: "127.0.0.1:{port:grpc}"}`, "a grpc: request needs target.grpc, the address the service serves gRPC on")
	}
	c.Method = strings.TrimPrefix(c.Method, "/")
	if !grpcMethod.MatchString(c.Method) {
		v.errorf(at+".method", "write package.Service/Method, such as shop.Catalog/GetItem", "grpc method %q is not package.Service/Method", c.Method)
	}
	if c.Message == "" {
		c.Message = "{}"
	}
	if _, err := compileTemplate(string(c.Message)); err != nil {
		v.errorf(at+".message", "write {1..50}, {a|b}, {random:1..50} or {seq} inside a string", "%v", err)
	}
	for k, val := range c.Metadata {
		if !metadataKey.MatchString(k) || strings.HasPrefix(k, "grpc-") {
			v.errorf(at+".metadata."+k, "metadata keys are lower case letters, digits, '-', '_' and '.', and not grpc-…", "metadata key %q cannot be sent", k)
		}
		if _, err := compileTemplate(val); err != nil {
			v.errorf(at+".metadata."+k, "", "%v", err)
		}
	}
}

// CheckGRPC checks every grpc: call of the scenario against the
// service's descriptors: that its method is a unary method the service
// has, and that its message is one of the method's input (as its first
// request renders it; a message with {capture.NAME} is checked for its
// JSON only). The errors name where the call is written.
func (sc *Scenario) CheckGRPC(files *protoregistry.Files) error {
	var errs ErrorList
	seen := map[*GRPCCall]bool{}
	check := func(l *Load) {
		for i := range l.Requests {
			c := l.Requests[i].GRPC
			if c == nil || seen[c] {
				continue
			}
			seen[c] = true
			if e := checkCall(c, files); e != nil {
				e.setExcerpt(sc.sourceOf(e.File))
				errs = append(errs, e)
			}
		}
	}
	check(&sc.Load)
	for i := range sc.Phases {
		check(&sc.Phases[i].Effective)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// sourceOf returns the text of the scenario file name, when it is the
// scenario's own or one of its includes.
func (sc *Scenario) sourceOf(name string) []byte {
	if name == sc.File {
		return sc.Source
	}
	for _, inc := range sc.Included {
		if inc.Path == name {
			return inc.Data
		}
	}
	return nil
}

// checkCall checks one call against files.
func checkCall(c *GRPCCall, files *protoregistry.Files) *Error {
	at := func(p contract.Position, hint, format string, args ...any) *Error {
		return &Error{File: p.File, Line: p.Line, Col: p.Column, Msg: fmt.Sprintf(format, args...), Hint: hint}
	}
	md, err := FindMethod(files, c.Method)
	if err != nil {
		return at(c.MethodAt, suggest.Hint(c.Method, MethodNames(files)), "%v", err)
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return at(c.MethodAt, "chaoskit calls unary methods", "grpc method %s streams", c.Method)
	}
	t, err := compileTemplate(string(c.Message))
	if err != nil {
		return at(c.MessageAt, "", "%v", err)
	}
	text := t.render(0, 1, rand.New(rand.NewPCG(1, 1)), nil)
	if t.hasCaptures() {
		if !json.Valid([]byte(text)) {
			return at(c.MessageAt, "", "the message is not JSON")
		}
		return nil
	}
	msg := dynamicpb.NewMessage(md.Input())
	if err := protojson.Unmarshal([]byte(text), msg); err != nil {
		return at(c.MessageAt, "write the fields of "+string(md.Input().FullName())+" in protobuf's JSON form: "+fieldList(md.Input()),
			"the message does not fit %s: %v", md.Input().FullName(), err)
	}
	return nil
}

// FindMethod returns the descriptor of a method, package.Service/Method,
// among files.
func FindMethod(files *protoregistry.Files, method string) (protoreflect.MethodDescriptor, error) {
	svc, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	d, err := files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("the service has no grpc service %s", svc)
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a grpc service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("grpc service %s has no method %s", svc, name)
	}
	return md, nil
}

// MethodNames lists every method of every service among files, as
// package.Service/Method, sorted.
func MethodNames(files *protoregistry.Files) []string {
	var out []string
	files.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			s := f.Services().Get(i)
			for j := range s.Methods().Len() {
				out = append(out, string(s.FullName())+"/"+string(s.Methods().Get(j).Name()))
			}
		}
		return true
	})
	slices.Sort(out)
	return out
}

// fieldList names a message's fields as its JSON form writes them.
func fieldList(md protoreflect.MessageDescriptor) string {
	fs := md.Fields()
	if fs.Len() == 0 {
		return "it has none, write {}"
	}
	names := make([]string, fs.Len())
	for i := range fs.Len() {
		f := fs.Get(i)
		names[i] = f.JSONName() + " (" + kindName(f) + ")"
	}
	return strings.Join(names, ", ")
}

func kindName(f protoreflect.FieldDescriptor) string {
	k := f.Kind().String()
	if f.Message() != nil {
		k = string(f.Message().FullName())
	}
	if f.IsList() {
		return "list of " + k
	}
	if f.IsMap() {
		return "map"
	}
	return k
}

// hasCaptures says whether the template holds a {capture.NAME}.
func (t *template) hasCaptures() bool {
	for _, p := range t.parts {
		if p.kind == captured {
			return true
		}
	}
	return false
}

// GRPCServices names the services the scenario's grpc: calls call, each
// once, in the order first written.
func (sc *Scenario) GRPCServices() []string {
	var out []string
	add := func(l *Load) {
		for _, r := range l.Requests {
			if r.GRPC == nil {
				continue
			}
			if svc, _, ok := strings.Cut(r.GRPC.Method, "/"); ok && !slices.Contains(out, svc) {
				out = append(out, svc)
			}
		}
	}
	add(&sc.Load)
	for i := range sc.Phases {
		add(&sc.Phases[i].Effective)
	}
	return out
}
