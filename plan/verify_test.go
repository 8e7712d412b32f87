package plan

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestVerifyRender: a verification request is made from the captures of
// the request it verifies and its answer; a value that is missing makes
// an error, never a request with a hole in it.
func TestVerifyRender(t *testing.T) {
	v := Verify{Name: "gone", Request: "get /links/{capture.code}?v={json.version}", Expect: []Status{"404", "410"},
		Headers: map[string]string{"Authorization": "Bearer {capture.token}", "X-Key": "{env.CHAOSKIT_TEST_KEY}", "X-Etag": "{header.etag}"}}
	env := func(name string) (string, bool) { return "k1", name == "CHAOSKIT_TEST_KEY" }
	m, p, h, err := v.Render(Captures{"code": "c7", "token": "t-1"}, http.Header{"Etag": {`"e2"`}}, `{"version": 3}`, env)
	if err != nil || m != "GET" || p != "/links/c7?v=3" || h.Get("Authorization") != "Bearer t-1" || h.Get("X-Key") != "k1" || h.Get("X-Etag") != `"e2"` {
		t.Errorf("Render = %s %s %v, %v", m, p, h, err)
	}
	if _, _, _, err := v.Render(Captures{"token": "t-1"}, nil, `{"version": 3}`, env); err == nil || !strings.Contains(err.Error(), "no {capture.code} was captured") {
		t.Errorf("a capture missing: %v", err)
	}
	if _, _, _, err := v.Render(Captures{"code": "c7", "token": "t-1"}, nil, `{}`, env); err == nil || !strings.Contains(err.Error(), "has no {json.version}") {
		t.Errorf("an answer value missing: %v", err)
	}
	if !v.Expected(404) || !v.Expected(410) || v.Expected(302) || v.Deadline() != defaultVerifyWithin {
		t.Error("expected statuses or default deadline")
	}
	v.Within = Duration(2 * time.Second)
	if v.Deadline() != 2*time.Second || !v.Selects("DELETE", "/x", nil, "", 204) || v.Selects("DELETE", "/x", nil, "", 500) {
		t.Error("within or selection by status")
	}
}

// TestVerifyValidate: what cannot work is refused at its place with a
// hint: no name, no selection, a request that is not a method and a
// path, a capture nothing makes, an unset environment variable, no
// expected status, too long a within, and violated_verifications
// without any rule.
func TestVerifyValidate(t *testing.T) {
	const src = `name: s
target:
  url: http://127.0.0.1:1
load:
  rate: 10/s
  requests:
    - name: life
      chain:
        - {name: create, method: POST, path: /links, capture: {code: "{json.code}"}}
        - {name: delete, method: DELETE, path: "/links/{capture.code}"}
phases:
  - name: p
    duration: 1s
verify:
  - name: gone
    requests: {template: life/delete}
    request: GET /{capture.cod}
    headers: {X-Key: "{env.CHAOSKIT_TEST_UNSET_KEY}", "Bad Name": x}
    within: 10m
  - requests: {template: life/delete}
    request: /{capture.code}
    expect: [404]
contracts:
  - name: c
    expect: [violated_verifications == 0]
`
	_, err := Parse("s.yaml", []byte(src), demoCatalog)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`s.yaml:17:14: {capture.cod} is used by verify rule "gone", and no setup step or chain step captures it (did you mean "code"?)`,
		`s.yaml:18:22: verify rule "gone" reads environment variable CHAOSKIT_TEST_UNSET_KEY, which is not set (export CHAOSKIT_TEST_UNSET_KEY`,
		`s.yaml:18:67: "Bad Name" is not a header name`,
		`s.yaml:15:5: verify rule "gone" does not say what answer it expects (add expect: [404]`,
		`s.yaml:19:13: within 10m0s is longer than 5m0s`,
		`s.yaml:20:5: verify rule 2 has no name (add name:`,
		`s.yaml:21:14: bad verification request "/{capture.code}" (write a method and a path on the target`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	noRule := strings.Replace(src, src[strings.Index(src, "verify:"):strings.Index(src, "contracts:")], "", 1)
	_, err = Parse("s.yaml", []byte(noRule), demoCatalog)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:16:14: violated_verifications needs the scenario to declare verify rules (add verify:") {
		t.Errorf("violated_verifications without verify: %v", err)
	}
}
