package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
)

// httpScenario has an HTTP proxy and a gRPC proxy whose descriptor set is
// the gRPC health service's; %s is the faults of its one phase (line 22).
const httpScenario = `name: http-faults
target:
  command:
    argv: [./svc, --listen, "127.0.0.1:{port}"]
  url: http://127.0.0.1:{port}
proxies:
  - name: prices
    protocol: http
    upstream: "127.0.0.1:{port:pricedep}"
  - name: stock
    protocol: grpc
    upstream: "127.0.0.1:{port:stockdep}"
    descriptor_set: health.pb
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - name: outage
    duration: 2s
    faults:
%s
contracts:
  - name: c
    expect: [primary >= 99%%]
`

func parseHTTPFaults(t *testing.T, faults string) (*Scenario, error) {
	t.Helper()
	dir := t.TempDir()
	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(grpc_health_v1.File_grpc_health_v1_health_proto)}}
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "health.pb"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "http.yaml")
	text := strings.Replace(httpScenario, "%s", faults, 1)
	text = strings.ReplaceAll(text, "%%", "%")
	return Parse(file, []byte(text), Options{})
}

// Faults on HTTP and gRPC proxies load with their source's description.
func TestHTTPProxyFaultsLoad(t *testing.T) {
	sc, err := parseHTTPFaults(t, `      - {proxy: prices, action: abort, value: "503", probability: 0.5, match: {method: GET, path: /price/*, headers: {X-Tenant: b}}}
      - {proxy: stock, action: abort, value: UNAVAILABLE, probability: 0.3, match: {grpc_method: grpc.health.v1.Health/Check}}`)
	if err != nil {
		t.Fatal(err)
	}
	fs := sc.Phases[0].Faults
	for i, want := range []struct{ source, path, term string }{
		{"http", "proxy/prices", "proxy prices abort 503 50% GET /price/* X-Tenant=b"},
		{"http", "proxy/stock", "proxy stock abort UNAVAILABLE 30% grpc.health.v1.Health/Check"},
	} {
		if got := fs[i].Source().Name; got != want.source || fs[i].Path != want.path || fs[i].Term != want.term {
			t.Errorf("fault %d: source %s, path %s, term %q; want %s, %s, %q", i, got, fs[i].Path, fs[i].Term, want.source, want.path, want.term)
		}
	}
}

// Bad input on an HTTP or gRPC proxy is refused at its place, with a hint.
func TestHTTPProxyFaultErrors(t *testing.T) {
	for _, tt := range []struct {
		name, faults, want string
	}{
		{"unknown gRPC method", `      - {proxy: stock, action: abort, match: {grpc_method: grpc.health.v1.Health/Chek}}`,
			`21:60: the descriptor set of proxy stock has no method grpc.health.v1.Health/Chek (did you mean "grpc.health.v1.Health/Check"?)`},
		{"malformed gRPC method", `      - {proxy: stock, action: abort, match: {grpc_method: "Health.Check"}}`,
			`21:60: "Health.Check" is not a gRPC method name (write package.Service/Method, such as truth.Stock/Get)`},
		{"gRPC method on an HTTP proxy", `      - {proxy: prices, action: abort, match: {grpc_method: a.B/C}}`,
			`21:61: proxy prices speaks http, not gRPC`},
		{"probability above 1", `      - {proxy: prices, action: abort, probability: 1.5}`,
			`21:53: probability 1.5 is outside 0..1 (write a share such as 0.3)`},
		{"unknown action", `      - {proxy: prices, action: abrt}`,
			`21:33: unknown action "abrt" for the http proxy prices (did you mean "abort"?)`},
		{"TCP action on an HTTP proxy", `      - {proxy: prices, action: down}`,
			`21:33: unknown action "down" for the http proxy prices`},
		{"status out of range", `      - {proxy: prices, action: abort, value: "99"}`,
			`21:47: "99" is not an HTTP status from 200 to 599`},
		{"unknown gRPC code", `      - {proxy: stock, action: abort, value: UNAVALABLE}`,
			`21:46: "UNAVALABLE" is not a gRPC status code other than OK (did you mean "UNAVAILABLE"?)`},
		{"delay without a duration", `      - {proxy: prices, action: delay}`,
			`21:9: a delay needs a positive duration as its value`},
		{"body on gRPC", `      - {proxy: stock, action: body, value: x}`,
			`21:32: a gRPC answer's body is framed messages`},
		{"bad path pattern", `      - {proxy: prices, action: abort, match: {path: "/price/["}}`,
			`21:54: path pattern "/price/[" is not valid`},
		{"TCP settings", `      - {proxy: prices, action: delay, value: 1s, latency: 1s}`,
			`21:9: proxy prices speaks http: its faults take no TCP settings`},
		{"match on a failpoint", `      - {point: x, action: error, match: {path: /}}`,
			`21:42: a failpoint fault matches requests by headers only, not by method, path or gRPC method`},
		{"match and count on a failpoint", `      - {point: x, action: error, count: 3, match: {headers: {X-Tenant: b}}}`,
			`21:42: a failpoint fault with a match takes no count`},
		{"two faults at once", "      - {proxy: prices, action: abort}\n      - {proxy: prices, action: delay, value: 1s, after: 1s}",
			`22:17: proxy prices has two faults at once`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseHTTPFaults(t, tt.faults)
			var l ErrorList
			if !errors.As(err, &l) || len(l) == 0 {
				t.Fatalf("err = %v, want an ErrorList", err)
			}
			found := false
			for _, e := range l {
				found = found || strings.Contains(e.Error(), "http.yaml:"+tt.want)
			}
			if !found {
				t.Errorf("got  %s\nwant http.yaml:%s", l, tt.want)
			}
		})
	}
}

// A proxy's protocol and descriptor set are checked where they are written.
func TestHTTPProxyDeclarationErrors(t *testing.T) {
	for _, tt := range []struct{ from, to, want string }{
		{"protocol: http", "protocol: htp", `8:15: proxy "prices": unknown protocol "htp" (did you mean "http"?)`},
		{"    protocol: http\n", "    protocol: http\n    descriptor_set: health.pb\n", `9:21: proxy "prices" speaks http: a descriptor set is for gRPC`},
		{"descriptor_set: health.pb", "descriptor_set: nosuch.pb", `13:21: cannot read descriptor_set`},
	} {
		t.Run(tt.want, func(t *testing.T) {
			dir := t.TempDir()
			text := strings.ReplaceAll(strings.Replace(httpScenario, "%s", "      - {proxy: prices, action: abort}", 1), "%%", "%")
			if !strings.Contains(text, tt.from) {
				t.Fatalf("no %q", tt.from)
			}
			_, err := Parse(filepath.Join(dir, "http.yaml"), []byte(strings.Replace(text, tt.from, tt.to, 1)), Options{})
			if err == nil || !strings.Contains(err.Error(), "http.yaml:"+tt.want) {
				t.Errorf("got  %v\nwant http.yaml:%s", err, tt.want)
			}
		})
	}
}
