package plan

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestExpandedLoadsAsTheScenario checks that the one document Expanded
// makes of a scenario and its includes loads, alone, as the scenario
// itself did: the merge it does by hand is the decoder's.
func TestExpandedLoadsAsTheScenario(t *testing.T) {
	const base = `vars: {rate: 10/s}
target:
  command:
    argv: [./svc, --listen, "127.0.0.1:{port}"]
    env: {A: a, B: b}
  url: http://127.0.0.1:{port}
  points: [example.com/svc/store/query]
  state: {path: /debug/state, interval: 50ms}
load:
  rate: ${rate}
  timeout: 750ms
  requests:
    - path: /a
    - path: /b
classify:
  source_header: X-Served-By
`
	const own = `name: s
include: common.yaml
phases:
  - name: warmup
    duration: 1s
`
	tests := []struct {
		name, common, own string
	}{
		{"no overrides", base, own},
		{"a struct behind a pointer merges", base, own + "target:\n  state: {interval: 20ms}\n"},
		{"a map is replaced", base, own + "target:\n  command:\n    env: {C: c}\n"},
		{"a list is replaced", base, own + "load:\n  requests: [{path: /c}]\n"},
		{"null resets a pointer", base, own + "classify: null\n"},
		{"null leaves a value", base, own + "load:\n  timeout: null\n"},
		{"a variable of the file itself", base, "vars: {rate: 30/s}\n" + own},
		{"a field only the file has", strings.Replace(base, "classify:\n  source_header: X-Served-By\n", "", 1), own + "classify: {age_header: X-Age}\n"},
	}
	// No catalog: the points stay as written, on both sides.
	opts := Options{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"common.yaml": tt.common, "s.yaml": tt.own})
			want, err := LoadFile(filepath.Join(dir, "s.yaml"), opts)
			if err != nil {
				t.Fatal(err)
			}
			text, err := want.Expanded()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(filepath.Join(dir, "flat.yaml"), text, opts)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if strings.Contains(string(text), "include") {
				t.Errorf("the expanded document still includes:\n%s", text)
			}
			for _, sc := range []*Scenario{want, got} {
				sc.File, sc.Source, sc.Values, sc.Included, sc.names, sc.Include = "", nil, nil, nil, nil, nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("expanded, the scenario loads as\n%+v\nnot\n%+v\n%s", got, want, text)
			}
		})
	}
}
