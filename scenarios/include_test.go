package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const common = `# shared by the scenarios of this directory
vars:
  rate: 10/s
target:
  demo:
    args: []
load:
  rate: ${rate}
  timeout: 750ms
  requests:
    - path: /products/{1..3}
`

const including = `name: s
include: common.yaml
load:
  timeout: 1s
phases:
  - name: warmup
    duration: 1s
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInclude(t *testing.T) {
	dir := writeFiles(t, map[string]string{"common.yaml": common, "s.yaml": including})
	sc, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	// From the included file: target, rate (through its var), requests.
	// From the file itself, overriding: the timeout.
	if sc.Target.Demo == nil || sc.Load.Rate != (Rate{10, time.Second}) || len(sc.Load.Requests) != 1 || sc.Load.Timeout.D() != time.Second {
		t.Errorf("merged scenario: target %+v load %+v", sc.Target, sc.Load)
	}
	// --var reaches the included file too.
	sc, err = LoadFile(filepath.Join(dir, "s.yaml"), Options{Catalog: demoCatalog.Catalog, Vars: map[string]string{"rate": "20/s"}})
	if err != nil || sc.Load.Rate != (Rate{20, time.Second}) {
		t.Errorf("--var through an include: %+v %v", sc, err)
	}
}

func TestIncludeErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing file", map[string]string{"s.yaml": including}, `s.yaml:2:10: cannot read included file common.yaml`},
		{"error inside the included file", map[string]string{"s.yaml": including, "common.yaml": strings.Replace(common, "timeout: 750ms", "timout: 750ms", 1)},
			`common.yaml:9:3: unknown field "timout" (did you mean "timeout"?)`},
		{"validation error at the included value", map[string]string{"s.yaml": including, "common.yaml": strings.Replace(common, "/products/{1..3}", "products", 1)},
			`common.yaml:11:13: path "products" is not absolute`},
		{"nested include", map[string]string{"s.yaml": including, "common.yaml": "include: other.yaml\n" + common},
			`common.yaml:1:10: an included file cannot include others`},
		{"not a path", map[string]string{"s.yaml": strings.Replace(including, "include: common.yaml", "include: {a: b}", 1), "common.yaml": common},
			`include must be a path or a list of paths`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeFiles(t, tt.files)
			_, err := LoadFile(filepath.Join(dir, "s.yaml"), demoCatalog)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}
