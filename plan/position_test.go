package plan

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/contract"
)

// at is the position of the first occurrence of key after marker in src:
// its line and column, 1-based.
func at(t *testing.T, file, src, marker, key string) contract.Position {
	t.Helper()
	i := strings.Index(src, marker)
	if i < 0 {
		t.Fatalf("%q not in the source", marker)
	}
	i += strings.Index(src[i:], key)
	line := strings.Count(src[:i], "\n") + 1
	col := i - strings.LastIndex(src[:i], "\n")
	return contract.Position{File: file, Line: line, Column: col}
}

// Each contract records where it is written: the line and column of its
// first key, in the file that holds it, as the file reads before its
// variables are filled in.
func TestContractPositions(t *testing.T) {
	// Two contracts on one line, the second after a variable whose value
	// is longer than its reference.
	head, _, _ := strings.Cut(judged, "contracts:\n")
	flow := head + "vars:\n  long: a name much longer than its reference\n" +
		`contracts: [{name: "${long}", expect: ["status == 200 for >= 99%"]}, {name: x, expect: ["fallback >= 99%"]}]` + "\n"
	dir := writeFiles(t, map[string]string{
		"common.yaml": common + "contracts:\n  - name: shared\n    expect: [status == 200 for >= 99%]\n",
		"s.yaml":      including,
	})
	included := filepath.Join(dir, "common.yaml")
	tests := []struct {
		name string
		load func() (*Scenario, error)
		want func() []contract.Position
	}{
		{"block mappings", func() (*Scenario, error) { return Parse("s.yaml", []byte(judged), demoCatalog) },
			func() []contract.Position {
				return []contract.Position{at(t, "s.yaml", judged, "- name: reads degrade", "name"), at(t, "s.yaml", judged, "- name: no acknowledged", "name")}
			}},
		{"flow mappings after a variable", func() (*Scenario, error) { return Parse("s.yaml", []byte(flow), demoCatalog) },
			func() []contract.Position {
				return []contract.Position{at(t, "s.yaml", flow, "contracts: [", "{"), at(t, "s.yaml", flow, "}, {name: x", "{name: x")}
			}},
		{"from an included file", func() (*Scenario, error) { return LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog) },
			func() []contract.Position {
				return []contract.Position{at(t, included, common+"contracts:\n  - name: shared", "- name: shared", "name")}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := tt.load()
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want()
			if len(sc.Contracts) != len(want) {
				t.Fatalf("%d contracts, want %d", len(sc.Contracts), len(want))
			}
			for i, c := range sc.Contracts {
				if c.Position != want[i] {
					t.Errorf("contract %d (%s) at %v, want %v", i, c.Name, c.Position, want[i])
				}
			}
		})
	}
}
