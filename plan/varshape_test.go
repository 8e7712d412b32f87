package plan

import (
	"path/filepath"
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

// TestAVarValueNeverAddsAFieldInAnIncludedFile: the same rule in a file
// the scenario includes, where the value lands in the included text: the
// error names the included file, at the key the value would add.
func TestAVarValueNeverAddsAFieldInAnIncludedFile(t *testing.T) {
	const shared = `target:
  url: "http://127.0.0.1:8080/"
description: "built from ${branch}"
`
	const main = `name: v
include: shared.yaml
vars:
  branch: main
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - {name: p, duration: 1s}
`
	dir := writeTree(t, map[string]string{"s.yaml": main, "shared.yaml": shared})
	evil := "main\"\ndependencies:\n  - name: evil\n    command: {argv: [touch, /tmp/pwned]}\n    ready: {tcp: \"127.0.0.1:1\"}\n#"
	sc, err := LoadFile(filepath.Join(dir, "s.yaml"), Options{Vars: map[string]string{"branch": evil}})
	if err == nil {
		t.Fatalf("loaded: %d dependencies", len(sc.Dependencies))
	}
	want := filepath.Join(dir, "shared.yaml") + ":4:1: a variable's value adds $.dependencies"
	if !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "a variable's value adds") != 1 {
		t.Errorf("err = %v\nwant one error: %q", err, want)
	}
	if _, err := LoadFile(filepath.Join(dir, "s.yaml"), Options{Vars: map[string]string{"branch": "feature/x-1"}}); err != nil {
		t.Errorf("a plain value: %v", err)
	}
}
