package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileSchema compiles JSONSchema with a real JSON Schema validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	text, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validateYAML validates one YAML document against sch, as an editor's
// YAML language server does: the document read as JSON data.
func validateYAML(sch *jsonschema.Schema, src []byte) error {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return fmt.Errorf("not YAML: %v", err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	return sch.Validate(doc)
}

// docsScenarios returns the YAML blocks of docs/*.md that are scenarios or
// parts of one (their first key, after comments, is one of Scenario's), by
// file:line.
func docsScenarios(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(text))
		var block *bytes.Buffer
		start := 0
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case block == nil && strings.TrimSpace(line) == "```yaml":
				block, start = &bytes.Buffer{}, n+1
			case block != nil && strings.TrimSpace(line) == "```":
				if scenarioText(block.String()) {
					out[fmt.Sprintf("%s:%d", f, start)] = block.Bytes()
				}
				block = nil
			case block != nil:
				block.WriteString(line + "\n")
			}
		}
	}
	return out
}

// Every bundled scenario (scenarios/, its fuzz, soak and deps folders, the
// included parts) and every whole scenario in docs/ is valid against the
// schema, read by santhosh-tekuri/jsonschema.
func TestSchemaAcceptsBundledAndDocsScenarios(t *testing.T) {
	sch := compileSchema(t)
	files := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join("..", "scenarios"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".yml") {
			return err
		}
		files[p], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d bundled scenarios", len(files))
	}
	docs := docsScenarios(t)
	if len(docs) == 0 {
		t.Fatal("found no scenario in docs/")
	}
	for k, v := range docs {
		files[k] = v
	}
	for name, src := range files {
		if err := validateYAML(sch, src); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The schema is no rubber stamp: a misspelt key, a key in the wrong place
// and a list where a mapping belongs are refused.
func TestSchemaRefusesWhatTheLoaderRefuses(t *testing.T) {
	sch := compileSchema(t)
	good, err := os.ReadFile(filepath.Join("..", "scenarios", "db-timeout-serves-cache.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateYAML(sch, good); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, old, new string }{
		{"misspelt key", "phases:", "phasess:"},
		{"unknown top-level key", "name:", "nmae:"},
		{"a list for a mapping", "load:", "load: []\nx_load:"},
	} {
		bad := strings.Replace(string(good), tt.old, tt.new, 1)
		if bad == string(good) {
			t.Fatalf("%s: %q not in the scenario", tt.name, tt.old)
		}
		if err := validateYAML(sch, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}

// scenarioText says whether the YAML text's first key, after comments and blank
// lines, is a key of Scenario.
func scenarioText(text string) bool {
	if strings.HasPrefix(text, "jobs:") || strings.Contains(text, "\njobs:") {
		return false // a GitHub Actions workflow, whose name: is not a scenario's
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, _, ok := strings.Cut(line, ":")
		if !ok {
			return false
		}
		_, known := structFields(reflect.TypeOf(Scenario{})).byName[key]
		return known
	}
	return false
}

// The schema knows the HTTP and gRPC proxies' keys: the truth case that
// uses them passes, and a misspelt key of a match is refused.
func TestSchemaHasHTTPProxyFaults(t *testing.T) {
	sch := compileSchema(t)
	good, err := os.ReadFile(filepath.Join("..", "testdata", "truth", "http-grpc-faults", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := validateYAML(sch, good); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ old, new string }{
		{"grpc_method:", "grpc_metod:"},
		{"protocol: http", "protocl: http"},
	} {
		bad := strings.Replace(string(good), tt.old, tt.new, 1)
		if err := validateYAML(sch, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", tt.new)
		}
	}
}
