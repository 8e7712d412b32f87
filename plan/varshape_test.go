package plan

import (
	"strings"
	"testing"
)

// TestAVarValueNeverAddsAField feeds --var values that, spliced into the
// text, would close a quote and add a dependency, or add a key through a
// flow mapping: the loader refuses them, and no dependency is made.
func TestAVarValueNeverAddsAField(t *testing.T) {
	const text = `name: v
target:
  url: "http://127.0.0.1:8080/"
  failpoints: http://127.0.0.1:7070
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - {name: p, duration: 1s, faults: [{point: x, action: error, value: ${msg}}]}
description: "built from ${branch}"
`
	for _, tt := range []struct{ name, branch, msg string }{
		{"quote and newlines", "main\"\ndependencies:\n  - name: evil\n    command: {argv: [touch, /tmp/pwned]}\n    ready: {tcp: \"127.0.0.1:1\"}\n#", "m"},
		{"flow mapping", "main", "m, probability: 0.5"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse("v.yaml", []byte(text), Options{Vars: map[string]string{"branch": tt.branch, "msg": tt.msg}})
			if err == nil {
				t.Fatalf("loaded: %d dependencies, faults %+v", len(sc.Dependencies), sc.Phases[0].Faults)
			}
			if !strings.Contains(err.Error(), "a variable's value adds") {
				t.Errorf("err = %v", err)
			}
		})
	}
	if _, err := Parse("v.yaml", []byte(text), Options{Vars: map[string]string{"branch": "feature/x-1", "msg": "db down"}}); err != nil {
		t.Errorf("plain values: %v", err)
	}
}
