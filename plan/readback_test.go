package plan

import (
	"strings"
	"testing"
	"time"
)

func TestReadHeaders(t *testing.T) {
	w := Write{Read: "GET /orders/{json.id}", ReadHeaders: map[string]string{
		"Authorization": "Bearer {env.CHAOSKIT_TEST_TOKEN}",
		"If-Match":      "{header.etag}",
		"X-Order":       "{json.id}",
	}}
	env := func(name string) (string, bool) {
		if name == "CHAOSKIT_TEST_TOKEN" {
			return "t0k", true
		}
		return "", false
	}
	h, err := w.ReadHeaderValues(map[string]string{"Etag": `"v3"`}, `{"id":"o-9"}`, env)
	if err != nil || h.Get("Authorization") != "Bearer t0k" || h.Get("If-Match") != `"v3"` || h.Get("X-Order") != "o-9" {
		t.Errorf("ReadHeaderValues = %v, %v", h, err)
	}
	if _, err := w.ReadHeaderValues(nil, `{"id":"o-9"}`, func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), "environment variable CHAOSKIT_TEST_TOKEN is not set") {
		t.Errorf("unset variable: %v", err)
	}
	if got := w.Headers(); len(got) != 1 || got[0] != "Etag" {
		t.Errorf("Headers = %v, want the acknowledgement header a read-back header takes", got)
	}
	if w.Within() != defaultReadWithin || !w.IsMissing(404) || !w.IsMissing(410) || w.IsMissing(400) {
		t.Error("defaults")
	}
	w.ReadWithin, w.Missing = Duration(2*time.Second), []Status{"400"}
	if w.Within() != 2*time.Second || !w.IsMissing(400) || w.IsMissing(404) {
		t.Error("settings")
	}
}

func TestReadHeadersValidate(t *testing.T) {
	const src = `name: s
target:
  url: http://127.0.0.1:1
load:
  rate: 10/s
  requests:
    - method: POST
      path: /orders
phases:
  - name: p
    duration: 1s
writes:
  - requests: {method: POST, path: /orders}
    read: GET /orders/{json.id}
    read_within: -1s
    read_headers:
      Authorization: "Bearer {env.CHAOSKIT_TEST_UNSET_TOKEN}"
      "Bad Name": x
      X-Curly: "{nope}"
contracts:
  - name: c
    expect: [lost_writes == 0]
`
	_, err := Parse("s.yaml", []byte(src), demoCatalog)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`s.yaml:17:22: read_headers Authorization reads environment variable CHAOSKIT_TEST_UNSET_TOKEN, which is not set (export CHAOSKIT_TEST_UNSET_TOKEN`,
		`s.yaml:18:19: read_headers: "Bad Name" is not a header name`,
		`s.yaml:19:16: bad placeholder in read_headers X-Curly`,
		`s.yaml:15:18: duration "-1s" is negative`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestBaselinePhaseValidate(t *testing.T) {
	const src = `name: s
target:
  url: http://127.0.0.1:1
load:
  rate: 10/s
  requests:
    - path: /
phases:
  - name: warmup
    duration: 1s
  - name: spin
    duration: 1s
contracts:
  - name: c
    phase: spin
    expect:
      - p99 latency <= 1.5 * baseline("warmpu")
      - status_shift("5xx", "idle") <= 10%
`
	_, err := Parse("s.yaml", []byte(src), demoCatalog)
	for _, want := range []string{
		`s.yaml:17:40: "p99 latency <= 1.5 * baseline(\"warmpu\")" names phase "warmpu", which the scenario does not have (did you mean "warmup"?)`,
		`s.yaml:18:30: "status_shift(\"5xx\", \"idle\") <= 10%" names phase "idle"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
