package httpproxy

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/netfault"
	"github.com/chaoskit/chaoskit/timeline"
)

// Protocols of the proxies this source serves: http is HTTP/1.1 and h2c,
// grpc is gRPC over h2c.
const (
	HTTP = "http"
	GRPC = "grpc"
)

func init() {
	fault.Register(&fault.Source{Name: "http",
		Names: func(s *fault.Spec) bool { return s.Proxy != "" && (s.Protocol == HTTP || s.Protocol == GRPC) },
		Check: check,
		Overlap: func(sc fault.Scope, s *fault.Spec, phase, other string) {
			sc.Errorf(".proxy", "give the faults separate after/for windows, or declare a second proxy in front of the same upstream", "proxy %s has two faults at once in phase %q: this one and %s", s.Proxy, phase, other)
		},
		Actuator:  func(env fault.Env) fault.Actuator { return actuator{env} },
		Protocols: []string{HTTP, GRPC},
		Serve: func(p fault.ProxyDecl, log io.Writer) (fault.Server, error) {
			return Start(p.Listen, p.Upstream, Options{GRPC: p.Protocol == GRPC, Log: log})
		},
	})
}

// grpcMethod is what a gRPC method may look like: package.Service/Method.
var grpcMethod = regexp.MustCompile(`^/?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*/[A-Za-z_][A-Za-z0-9_]*$`)

// headerName is what an HTTP header name may be (RFC 9110's token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// check checks a fault on an HTTP or gRPC proxy and fills in Path and
// Term.
func check(sc fault.Scope, s *fault.Spec) bool {
	if s.Point != "" || s.Process != "" {
		sc.Errorf("", "split it into one fault per source", "a fault names one of point, proxy or process")
		return false
	}
	decl, _ := sc.Proxy(s.Proxy)
	grpc := decl.Protocol == GRPC
	if s.Settings != (netfault.Fault{}) {
		sc.Errorf("", "give the action's setting as value: value: 300ms for a delay", "proxy %s speaks %s: its faults take no TCP settings (direction, latency, jitter, rate, ...)", s.Proxy, decl.Protocol)
		return false
	}
	if s.Distribution != "" {
		sc.Errorf(".distribution", "give a delay's duration as value: value: 300ms", "proxy %s speaks %s: its delay takes a duration, not a distribution", s.Proxy, decl.Protocol)
		return false
	}
	if !slices.Contains(Actions, s.Action) {
		sc.Errorf(".action", suggest.Hint(s.Action, Actions), "unknown action %q for the %s proxy %s", s.Action, decl.Protocol, s.Proxy)
		return false
	}
	if !(s.Probability >= 0 && s.Probability <= 1) { // NaN too
		sc.Errorf(".probability", "write a share such as 0.3", "probability %v is outside 0..1", s.Probability)
		return false
	}
	if s.Count < 0 {
		sc.Errorf(".count", "", "count %d is negative", s.Count)
		return false
	}
	if _, ok := faultOf(sc, s, grpc); !ok {
		return false
	}
	if !checkMatch(sc, s.Match, decl) {
		return false
	}
	s.Path = "proxy/" + s.Proxy
	s.Term = term(s, grpc)
	return true
}

// faultOf makes the proxy's fault of s, reporting a value that does not
// fit its action.
func faultOf(sc fault.Scope, s *fault.Spec, grpc bool) (Fault, bool) {
	f := Fault{Action: s.Action, Match: s.Match, Probability: s.Probability, Count: s.Count}
	switch s.Action {
	case Abort:
		if grpc {
			f.Code = codes.Unavailable
			if s.Value != "" {
				c, ok := ParseCode(s.Value)
				if !ok || c == codes.OK {
					sc.Errorf(".value", suggest.Hint(s.Value, CodeNames()[1:]), "%q is not a gRPC status code other than OK", s.Value)
					return f, false
				}
				f.Code = c
			}
			break
		}
		f.Status = http.StatusServiceUnavailable
		if s.Value != "" {
			n, err := strconv.Atoi(s.Value)
			if err != nil || n < 200 || n > 599 {
				sc.Errorf(".value", "write an HTTP status such as 503", "%q is not an HTTP status from 200 to 599", s.Value)
				return f, false
			}
			f.Status = n
		}
	case Delay:
		d, err := time.ParseDuration(s.Value)
		if err != nil || d <= 0 {
			sc.Errorf(".value", "write how long, such as value: 300ms", "a delay needs a positive duration as its value, not %q", s.Value)
			return f, false
		}
		f.Delay = d
	case Drop:
		if s.Value != "" {
			n, err := strconv.ParseInt(s.Value, 10, 64)
			if err != nil || n < 0 {
				sc.Errorf(".value", "write how many bytes of the body to let through, such as 0 or 512", "a drop's value %q is not a count of bytes", s.Value)
				return f, false
			}
			f.Bytes = n
		}
	case Body:
		if grpc {
			sc.Errorf(".action", "abort with a gRPC code, delay or drop", "a gRPC answer's body is framed messages: the body action is for HTTP proxies")
			return f, false
		}
		f.Body = s.Value
	}
	return f, true
}

// checkMatch checks which requests a fault names.
func checkMatch(sc fault.Scope, m *fault.Match, decl fault.ProxyDecl) bool {
	if m == nil {
		return true
	}
	ok := true
	if m.Method != "" && !headerName.MatchString(m.Method) {
		sc.Errorf(".match.method", "write an HTTP method such as GET", "method %q is not an HTTP method", m.Method)
		ok = false
	}
	if m.Path != "" {
		if _, err := path.Match(m.Path, "/"); err != nil || !strings.HasPrefix(m.Path, "/") {
			sc.Errorf(".match.path", "write a path pattern such as /price/* (* matches within one segment)", "path pattern %q is not valid", m.Path)
			ok = false
		}
	}
	for k := range m.Headers {
		if !headerName.MatchString(k) {
			sc.Errorf(".match.headers", "write a header name such as X-Tenant", "%q is not a header name", k)
			ok = false
		}
	}
	if m.GRPCMethod == "" {
		return ok
	}
	switch {
	case decl.Protocol != GRPC:
		sc.Errorf(".match.grpc_method", "declare the proxy with protocol: grpc", "proxy %s speaks %s, not gRPC", decl.Name, decl.Protocol)
		return false
	case !grpcMethod.MatchString(m.GRPCMethod):
		sc.Errorf(".match.grpc_method", "write package.Service/Method, such as truth.Stock/Get", "%q is not a gRPC method name", m.GRPCMethod)
		return false
	case decl.Methods != nil:
		names := methodNames(decl)
		want := strings.TrimPrefix(m.GRPCMethod, "/")
		if !slices.Contains(names, want) {
			sc.Errorf(".match.grpc_method", suggest.Hint(want, names), "the descriptor set of proxy %s has no method %s", decl.Name, want)
			return false
		}
	}
	return ok
}

// methodNames lists the methods of the proxy's descriptor set, as
// package.Service/Method.
func methodNames(decl fault.ProxyDecl) []string {
	var out []string
	decl.Methods.RangeFiles(func(f protoreflect.FileDescriptor) bool {
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

// term describes the fault for logs and the timeline: "proxy prices abort
// 503 50% GET /price/* X-Tenant=b".
func term(s *fault.Spec, grpc bool) string {
	f, _ := faultOf(nopScope{}, s, grpc)
	parts := []string{"proxy " + s.Proxy, describe(f, grpc)}
	if s.Action == Body {
		parts[1] = fmt.Sprintf("body %q", s.Value)
	}
	if s.Probability > 0 && s.Probability < 1 {
		parts = append(parts, strconv.FormatFloat(s.Probability*100, 'f', -1, 64)+"%")
	}
	if s.Count > 0 {
		parts = append(parts, fmt.Sprintf("%d times", s.Count))
	}
	if m := s.Match; m != nil {
		if m.Method != "" {
			parts = append(parts, strings.ToUpper(m.Method))
		}
		if m.Path != "" {
			parts = append(parts, m.Path)
		}
		if m.GRPCMethod != "" {
			parts = append(parts, strings.TrimPrefix(m.GRPCMethod, "/"))
		}
		keys := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			parts = append(parts, k+"="+m.Headers[k])
		}
	}
	return strings.Join(parts, " ")
}

// nopScope reports nothing, for describing a fault already checked.
type nopScope struct{ fault.Scope }

func (nopScope) Errorf(string, string, string, ...any) {}

// actuator switches the faults of a run's HTTP and gRPC proxies.
type actuator struct{ env fault.Env }

func (a actuator) proxy(s fault.Spec) (*Proxy, error) {
	p, ok := a.env.Proxy(s.Proxy).(*Proxy)
	if !ok {
		return nil, fmt.Errorf("proxy %s is not running", s.Proxy)
	}
	return p, nil
}

func (a actuator) On(s fault.Spec) error {
	p, err := a.proxy(s)
	if err != nil {
		return err
	}
	f, _ := faultOf(nopScope{}, &s, p.opts.GRPC)
	f.ID = s.Path
	phase, point := s.Phase, s.Path
	f.Record = func(d Done) {
		a.env.Event(timeline.Event{Kind: timeline.FaultRequest, Phase: phase, Point: point,
			Data: map[string]any{"request": d.Request, "done": d.Action}})
	}
	p.Enable(f)
	return nil
}

func (a actuator) Off(s fault.Spec, _ bool) error {
	p, err := a.proxy(s)
	if err != nil {
		return nil // the proxy is gone, and its faults with it
	}
	matched, acted, ok := p.Disable(s.Path)
	if ok {
		h := int64(acted)
		a.env.Event(timeline.Event{Kind: timeline.FaultHits, Phase: s.Phase, Point: s.Path, Hits: &h,
			Data: map[string]any{"matched": matched}})
	}
	return nil
}

func (actuator) BackAtOnce(fault.Spec) bool { return false }
