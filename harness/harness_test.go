package harness

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/breakerimpl"
	// The saved runs of these tests are the demo's: its profile names its
	// headers.
	_ "github.com/chaoskit/chaoskit/demo/profile"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

const headersScenario = `name: headers
target:
  url: http://127.0.0.1:8080
load:
  rate: 10/s
  requests:
    - method: POST
      path: /orders
phases:
  - name: p
    duration: 1s
classify:
  source_header: X-Served-By
  rules:
    - class: fallback
      header: {x-cache: HIT}
writes:
  - requests: {method: POST, path: /orders}
    read: GET {header.location}
contracts:
  - name: c
    expect:
      - header("x-trace-id") != "" for >= 99%
      - lost_writes == 0
`

// RecordedHeaders names every header the scenario reads, wherever it
// reads it.
func TestRecordedHeaders(t *testing.T) {
	sc, err := plan.Parse("headers.yaml", []byte(headersScenario), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names, all := sc.RecordedHeaders()
	if got := strings.Join(names, ","); got != "Location,X-Cache,X-Served-By,X-Trace-Id" || all {
		t.Errorf("recorded headers %s (all %v)", got, all)
	}
}

// The library and the harness agree on words: a breakerimpl result whose
// source is SourcePrimary, passed through unchanged, is primary.
func TestClassifierSpeaksBreakerimpl(t *testing.T) {
	sc, err := plan.Parse("headers.yaml", []byte(headersScenario), plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Classify = &plan.Classify{SourceHeader: "X-Served-By"} // no rules
	classify := sc.Classifier()
	for source, want := range map[string]timeline.Class{breakerimpl.SourcePrimary: timeline.Primary, "cache": timeline.Fallback, "": timeline.Primary} {
		r := &timeline.Request{Status: 200, Headers: map[string]string{"X-Served-By": source}}
		if got := classify(r); got != want {
			t.Errorf("source %q: %s, want %s", source, got, want)
		}
	}
}
