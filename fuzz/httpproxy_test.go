package fuzz

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/plan"
)

// quotes is a fuzz scenario whose fault space holds an HTTP proxy (one
// route, tenant b) and a gRPC proxy (one method).
const quotes = `name: quotes
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
load:
  rate: 100/s
  requests: [{path: /quote/1}]
fuzz:
  duration: 1s..2s
  max_faults: 2
  faults:
    - proxy: prices
      actions: [abort, delay, drop]
      statuses: [502, 503]
      latency: 20ms..300ms
      probability: 0.5..1
      match: {method: GET, path: /price/*, headers: {X-Tenant: b}}
    - proxy: stock
      actions: [abort, delay]
      match: {grpc_method: truth.Stock/Get}
contracts:
  - name: answers
    expect:
      - status == 200 for == 100%
`

// Faults of HTTP and gRPC proxies are drawn with their values and match,
// rendered, and loaded back as the same schedule, from their own source;
// explore's singles take the strongest of each.
func TestHTTPProxyFaultsAreDrawnRenderedAndLoadedBack(t *testing.T) {
	sc, err := plan.Parse(filepath.Join(t.TempDir(), "quotes.yaml"), []byte(quotes), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for trial := 1; trial <= 60; trial++ {
		s := Generate(sc.Fuzz, 7, trial)
		if err := s.Validate(sc.Fuzz); err != nil {
			t.Fatalf("trial %d: %v: %s", trial, err, s)
		}
		got, text, err := Load(sc, s, "quotes-trial", filepath.Join(t.TempDir(), "trial.yaml"), "", plan.Options{})
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, text)
		}
		if back := Extract(got); !reflect.DeepEqual(back.Phases, s.Phases) {
			t.Fatalf("trial %d: rendered\n%s\nloaded back as\n%s\n%s", trial, s, back, text)
		}
		for _, p := range got.Phases {
			for _, f := range p.Faults {
				seen[f.Path+"="+f.Action] = true
				if f.Source().Name != "http" || f.Match == nil {
					t.Errorf("trial %d: fault %+v from %s", trial, f, f.Source().Name)
				}
				if f.Proxy == "prices" && f.Action == "abort" && f.Value != "502" && f.Value != "503" {
					t.Errorf("trial %d: abort with %q, want 502 or 503", trial, f.Value)
				}
				if f.Proxy == "prices" && !strings.HasSuffix(f.Term, "GET /price/* X-Tenant=b") {
					t.Errorf("trial %d: term %q lost the match", trial, f.Term)
				}
			}
		}
	}
	if len(seen) != 5 {
		t.Errorf("60 trials drew %v, want the five actions", seen)
	}
	var singles []string
	for _, c := range Singles(sc.Fuzz) {
		singles = append(singles, c[0].String())
	}
	want := "proxy/prices=abort(502) proxy/prices=delay(300ms) proxy/prices=drop proxy/stock=abort proxy/stock=delay(500ms)"
	if got := strings.Join(singles, " "); got != want {
		t.Errorf("singles %s\nwant    %s", got, want)
	}
}

// A fault space's HTTP proxy is checked as a phase's fault is.
func TestHTTPProxyFaultSpaceErrors(t *testing.T) {
	for _, tt := range []struct{ from, to, want string }{
		{"actions: [abort, delay, drop]", "actions: [abort, body]", `action "body" cannot be fuzzed`},
		{"actions: [abort, delay]", "actions: [abort, delay]\n      statuses: [503]", "a grpc proxy fault takes no HTTP statuses"},
		{"grpc_method: truth.Stock/Get", "grpc_method: truth.Stock.Get", `"truth.Stock.Get" is not a gRPC method name`},
	} {
		text := strings.Replace(quotes, tt.from, tt.to, 1)
		_, err := plan.Parse(filepath.Join(t.TempDir(), "quotes.yaml"), []byte(text), plan.Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.to, err, tt.want)
		}
	}
}
