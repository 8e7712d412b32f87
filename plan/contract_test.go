package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/chaoskit/chaoskit/contract"
)

// judged is a scenario using every part of the contract language.
const judged = `name: orders
target:
  demo:
    args: []
load:
  rate: 10/s
  requests:
    - path: /products/{1..3}
    - method: POST
      path: /orders
phases:
  - name: warmup
    duration: 1s
  - name: fault
    duration: 2s
    faults:
      - point: orderWrite
        action: error
classify:
  source_json: meta.source
  primary: [origin]
  rejected:
    status: [429, 5xx]
    within: 20ms
  rules:
    - class: fallback
      source: edge
      status: [200]
      header: {X-Cache: HIT}
      json: {degraded: true, tier: 2}
      max_latency: 10ms
writes:
  - requests: {method: POST, path: /orders}
    ack: [201]
    read: GET /orders/{json.id}
    compare: [product_id, quantity]
contracts:
  - name: reads degrade
    phase: fault
    settle: 200ms
    until: 1500ms
    requests: {method: GET, path: /products/*}
    min_samples: 10
    expect:
      - fallback >= 99%
      - p99 latency < 150ms
  - name: no acknowledged write lost
    expect:
      - lost_writes == 0
`

func TestJudgedScenarioParses(t *testing.T) {
	sc, err := Parse("s.yaml", []byte(judged), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Contracts[0].Spec()
	if s.Phase != "fault" || s.Settle != 200*time.Millisecond || s.Until != 1500*time.Millisecond || s.MinSamples != 10 ||
		s.Requests != (contract.Filter{Method: "GET", Path: "/products/*"}) {
		t.Errorf("spec = %+v", s)
	}
	cls := s.Classify
	if cls.SourceJSON != "meta.source" || cls.Primary[0] != "origin" || cls.RejectWithin != 20*time.Millisecond ||
		len(cls.RejectStatus) != 2 || cls.RejectStatus[1] != (contract.StatusRange{Lo: 500, Hi: 599}) {
		t.Errorf("classification = %+v", cls)
	}
	r := cls.Rules[0]
	if r.Class != contract.Fallback || r.Source != "edge" || r.Header["X-Cache"] != "HIT" || r.JSON["degraded"] != "true" || r.JSON["tier"] != "2" || r.MaxLatency != 10*time.Millisecond {
		t.Errorf("rule = %+v", r)
	}
	if w := sc.Contracts[1].Spec(); w.Phase != "" || w.Classify.SourceJSON != "meta.source" {
		t.Errorf("whole-run contract = %+v", w)
	}
}

func TestContractErrors(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           string
	}{
		{"unknown class", "class: fallback", "class: fallbak", `s.yaml:26:14: unknown class "fallbak" (did you mean "fallback"?)`},
		{"bad status", "status: [429, 5xx]", "status: [429, 6xx]", `s.yaml:23:19: status "6xx" is neither a code (503) nor a class (5xx)`},
		{"json condition not plain", "json: {degraded: true, tier: 2}", "json: {degraded: [true]}", `s.yaml:30:24: a json condition must be a plain value`},
		{"both sources", "source_json: meta.source", "source_json: meta.source\n  source_header: X-Source", `s.yaml:20:16: classify has both source_header and source_json`},
		{"write without requests", "  - requests: {method: POST, path: /orders}\n    ack", "  - ack", `s.yaml:33:5: write 1 does not say which requests are writes`},
		{"write without read", "    read: GET /orders/{json.id}\n", "", `s.yaml:33:5: write 1 does not say how to read it back`},
		{"bad read", "read: GET /orders/{json.id}", "read: /orders/{json.id}", `s.yaml:35:11: bad read "/orders/{json.id}"`},
		{"bad placeholder", "read: GET /orders/{json.id}", "read: GET /orders/{id}", `s.yaml:35:11: bad placeholder in read`},
		{"bad filter method", "{method: GET, path: /products/*}", "{method: GRAB, path: /products/*}", `s.yaml:42:24: unknown method "GRAB"`},
		{"bad filter glob", "{method: GET, path: /products/*}", "{method: GET, path: \"/products/[\"}", `s.yaml:42:35: bad path glob "/products/["`},
		{"last with settle", "    until: 1500ms", "    last: 500ms", `s.yaml:41:11: last cannot be combined with settle or until`},
		{"until before settle", "until: 1500ms", "until: 100ms", `s.yaml:41:12: until 100ms leaves nothing after settle 200ms`},
		{"until past the phase", "until: 1500ms", "until: 3s", `s.yaml:41:12: until 3s is past the end of phase "fault" (2s)`},
		{"settle past the run", "  - name: no acknowledged write lost\n", "  - name: no acknowledged write lost\n    settle: 3s\n", `s.yaml:48:13: settle 3s leaves nothing of the run (3s)`},
		{"aggregate without unit", "p99 latency < 150ms", "p99 latency < 150", `s.yaml:46:23: "150" is not a duration (add a unit: 150ms or 150s)`},
		{"unknown form", "fallback >= 99%", "fallbacks >= 99%", `s.yaml:45:9: expectation "fallbacks >= 99%" has no quantifier and is no known form`},
		{"lost writes without writes", "writes:\n  - requests: {method: POST, path: /orders}\n    ack: [201]\n    read: GET /orders/{json.id}\n    compare: [product_id, quantity]\n", "", `lost_writes needs the scenario to declare its writes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(judged, tt.from, tt.to, 1)
			if src == judged {
				t.Fatalf("replacement %q not applied", tt.from)
			}
			_, err := Parse("s.yaml", []byte(src), demoCatalog)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	w := Write{Requests: RequestFilter{Method: "POST", Path: "/orders"}, Ack: []Status{"201"}, Read: "get /orders/{json.id}/items/{json.line}"}
	for _, tt := range []struct {
		method, path string
		status       int
		want         bool
	}{{"POST", "/orders", 201, true}, {"POST", "/orders", 200, false}, {"POST", "/orders", 503, false}, {"GET", "/orders", 201, false}, {"POST", "/orders/1", 201, false}} {
		if got := w.Acknowledged(tt.method, tt.path, nil, "", tt.status); got != tt.want {
			t.Errorf("Acknowledged(%s %s %d) = %v", tt.method, tt.path, tt.status, got)
		}
	}
	if !(&Write{Requests: RequestFilter{Tag: "w"}}).Acknowledged("PUT", "/x", []string{"w"}, "", 204) {
		t.Error("default ack is any 2xx")
	}
	m, p, err := w.ReadTarget(nil, `{"id":"ab12","line":3}`)
	if err != nil || m != "GET" || p != "/orders/ab12/items/3" {
		t.Errorf("ReadTarget = %s %s %v", m, p, err)
	}
	if _, _, err := w.ReadTarget(nil, `{"line":3}`); err == nil || !strings.Contains(err.Error(), "no json.id") {
		t.Errorf("missing id: %v", err)
	}
	loc := Write{Read: "GET {header.location}"}
	if _, p, err := loc.ReadTarget(map[string]string{"Location": "/orders/9"}, ""); err != nil || p != "/orders/9" {
		t.Errorf("header placeholder: %s %v", p, err)
	}
}

// TestDocsExamplesCompile keeps docs/contracts.md honest: every expectation
// in its YAML examples compiles, with the ${name} of the example's own vars
// filled in, and every scenario fragment decodes.
func TestDocsExamplesCompile(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "contracts.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) < 7 {
		t.Fatalf("found %d YAML examples", len(blocks))
	}
	n := 0
	var vars map[string]any
	var walk func(v any, underExpect bool)
	walk = func(v any, underExpect bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(x, k == "expect")
			}
		case []any:
			for _, x := range v {
				if s, ok := x.(string); ok && underExpect {
					n++
					for k, v := range vars {
						s = strings.ReplaceAll(s, "${"+k+"}", fmt.Sprint(v))
					}
					if _, err := contract.Compile(contract.Spec{Name: "doc", Expect: []string{s}}); err != nil {
						t.Errorf("docs/contracts.md: %q: %v", s, err)
					}
					continue
				}
				walk(x, underExpect)
			}
		}
	}
	for _, b := range blocks {
		var v any
		if err := yaml.Unmarshal([]byte(b[1]), &v); err != nil {
			t.Errorf("docs/contracts.md: example does not decode: %v\n%s", err, b[1])
			continue
		}
		vars = nil
		if m, ok := v.(map[string]any); ok {
			vars, _ = m["vars"].(map[string]any)
		}
		_, isList := v.([]any)
		walk(v, isList)
	}
	if n < 20 {
		t.Errorf("checked only %d expectations", n)
	}
}
