package plan

import (
	"net/http"
	"strings"
	"testing"
)

// chainScenario is a scenario whose load is a chain the test gives
// (CHAIN), after a setup that captures token.
const chainScenario = `name: chain
target:
  url: http://127.0.0.1:8080
setup:
  - {http: POST /login, capture: {token: "{json.token}"}}
load:
  rate: 10/s
  requests:
CHAIN
phases:
  - name: p
    duration: 2s
contracts:
  - name: reads
    phase: p
    requests: {template: link-lifecycle/read}
    expect: ["status 5xx <= 1%"]
`

const goodChain = `    - name: link-lifecycle
      tags: [links]
      chain:
        - {name: create, method: post, path: /api/links, body: '{"url":"https://example.com/{seq}"}', capture: {code: "{json.code}", at: "{header.Location}", id: "{regexp.id=([0-9]+)}"}}
        - {name: read, path: "/{capture.code}", think: 100ms, headers: {Authorization: "Bearer {capture.token}"}, tags: [read]}
        - {name: delete, method: DELETE, path: "/api/links/{capture.code}?at={capture.at}&id={capture.id}", think: 50ms}`

func parseChain(t *testing.T, chain string) (*Scenario, error) {
	t.Helper()
	return Parse("chain.yaml", []byte(strings.Replace(chainScenario, "CHAIN", chain, 1)), Options{})
}

func TestChainIterations(t *testing.T) {
	sc, err := parseChain(t, goodChain+`
    - {name: health, path: /health, weight: 2}`)
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Load.HasChains() {
		t.Fatal("HasChains is false")
	}
	g, err := NewGenerator(sc.Load, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.SetCaptures(Captures{"token": "T"})
	// Weights 1 (the chain) and 2 (health): one chain in three iterations.
	var it *Iteration
	plain := 0
	for range 3 {
		x := g.NextIteration()
		if x.Len() == 1 {
			plain++
			if r := x.Request(0); r.Path != "/health" || r.Template != "health" {
				t.Errorf("plain iteration sends %+v", r)
			}
			continue
		}
		it = x
	}
	if it == nil || plain != 2 || it.Len() != 3 {
		t.Fatalf("3 iterations gave %d plain ones and chain %v", plain, it)
	}
	create := it.Request(0)
	if create.Method != "POST" || create.Template != "link-lifecycle/create" || strings.Join(create.Tags, ",") != "links" {
		t.Errorf("create is %+v", create)
	}
	if _, _, blocked := it.Blocked(0); blocked {
		t.Error("the first step is blocked")
	}
	h := http.Header{}
	h.Set("Location", "/api/links/abc")
	it.Take(0, 201, h, []byte(`{"code":"abc","note":"id=42"}`))
	if _, why, blocked := it.Blocked(1); blocked {
		t.Fatalf("read is blocked: %s", why)
	}
	read := it.Request(1)
	if read.Path != "/abc" || read.Headers["Authorization"] != "Bearer T" || read.Template != "link-lifecycle/read" || strings.Join(read.Tags, ",") != "links,read" {
		t.Errorf("read is %+v", read)
	}
	if it.Think(1).Milliseconds() != 100 || it.Think(0) != 0 {
		t.Errorf("think times %v %v", it.Think(0), it.Think(1))
	}
	it.Take(1, 200, http.Header{}, nil)
	if del := it.Request(2); del.Path != "/api/links/abc?at=/api/links/abc&id=42" {
		t.Errorf("delete is %+v", del)
	}
	if d := it.Describe(2); d.Path != "/api/links/{capture.code}?at={capture.at}&id={capture.id}" || d.Method != "DELETE" {
		t.Errorf("delete is described as %+v", d)
	}

	// A second iteration has its own captures: none until its create
	// answers, and what is missing says why.
	for range 3 {
		if x := g.NextIteration(); x.Len() == 3 {
			it = x
		}
	}
	for _, tt := range []struct {
		status int
		body   string
		why    string
	}{
		{500, `{"code":"x"}`, "create got 500"},
		{0, "", "create got no response"},
		{201, `{"id":1}`, "create's answer (201) has no json.code"},
	} {
		x := *it
		x.caps, x.missing = nil, nil
		x.Take(0, tt.status, http.Header{}, []byte(tt.body))
		name, why, blocked := x.Blocked(1)
		if !blocked || name != "code" || why != tt.why {
			t.Errorf("after %d %s: blocked %v on %q because %q, want code because %q", tt.status, tt.body, blocked, name, why, tt.why)
		}
	}
}

func TestChainMistakesAreRefusedWithTheirPlace(t *testing.T) {
	tests := []struct {
		name, chain string
		want        []string
	}{
		{"a capture used before the step that makes it", `    - name: c
      chain:
        - {name: read, path: "/{capture.code}"}
        - {name: create, method: POST, path: /api/links, capture: {code: "{json.code}"}}`, []string{
			`chain.yaml:11:30: {capture.code} is used before a setup step or an earlier step of chain "c" captures it`,
		}},
		{"a capture of another chain", `    - name: a
      chain:
        - {name: create, method: POST, path: /a, capture: {code: "{json.code}"}}
    - name: b
      chain:
        - {name: read, path: "/{capture.code}"}`, []string{
			`chain.yaml:14:30: {capture.code} is used before a setup step or an earlier step of chain "b" captures it`,
		}},
		{"a misspelt capture", `    - name: c
      chain:
        - {name: create, method: POST, path: /a, capture: {code: "{json.code}"}}
        - {name: read, path: "/{capture.cod}"}`, []string{
			`(did you mean "code"?)`,
		}},
		{"a chain capture shadowing a setup capture", `    - name: c
      chain:
        - {name: create, method: POST, path: /a, capture: {token: "{json.token}"}}`, []string{
			`chain.yaml:11:67: capture "token" of chain "c" has the name of a setup step's capture`,
		}},
		{"an empty chain", `    - {name: c, chain: []}`, []string{
			`chain "c" has no steps`,
		}},
		{"an unknown field in a step", `    - name: c
      chain:
        - {name: read, path: /a, thinks: 1s}`, []string{
			`chain.yaml:11:34: unknown field "thinks"`,
		}},
		{"a negative think time", `    - name: c
      chain:
        - {name: read, path: /a, think: -1s}`, []string{
			`duration "-1s" is negative`,
		}},
		{"a think time as long as the phase", `    - name: c
      chain:
        - {name: read, path: /a}
        - {name: again, path: /a, think: 2s}`, []string{
			`chain.yaml:12:42: step "again" of chain "c" thinks 2s, as long as phase "p" lasts or longer (2s)`,
		}},
		{"a chain without a name", `    - chain: [{path: /a}]`, []string{
			`a chain needs a name`,
		}},
		{"a chain with a path of its own", `    - {name: c, path: /a, chain: [{path: /a}]}`, []string{
			`a chain has no path of its own`,
		}},
		{"a capture of nothing", `    - name: c
      chain:
        - {path: /a, capture: {x: "abc"}}`, []string{
			`capture "x" takes nothing from the step's answer`,
		}},
		{"a capture a step's answer does not give", `    - name: c
      chain:
        - {path: /a, capture: {x: "{row.x}"}}`, []string{
			`capture "x" reads {row.x}, which an answer does not give`,
		}},
		{"a pattern of two groups", `    - name: c
      chain:
        - {path: /a, capture: {x: "{regexp.(a)(b)}"}}`, []string{
			`capture "x": pattern "(a)(b)" has 2 groups`,
		}},
		{"two steps of one name", `    - name: c
      chain:
        - {name: a, path: /a}
        - {name: a, path: /b}`, []string{
			`step name "a" is used twice in chain "c"`,
		}},
		{"a contract over a step no chain has", `    - name: link-lifecycle
      chain:
        - {name: create, path: /a}
        - {name: reed, path: /b}`, []string{
			`no request template is named "link-lifecycle/read" (did you mean "link-lifecycle/reed"?)`,
		}},
		{"a chain mixed with gRPC calls", `    - name: c
      chain:
        - {path: /a}
    - {grpc: {method: a.B/C}}`, []string{
			`a load's requests are all grpc: calls or none`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseChain(t, tt.chain)
			if err == nil {
				t.Fatal("loaded")
			}
			if e, ok := err.(interface{ ExitCode() int }); !ok || e.ExitCode() != 2 {
				t.Errorf("%T is not invalid input (exit 2)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no %q in\n%v", w, err)
				}
			}
		})
	}
}
