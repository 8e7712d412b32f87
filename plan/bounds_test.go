package plan

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// nestedBrackets is a 60 KB file of nested flow lists: before the bounds
// the YAML parser took 1.4 GB and seconds on it.
func nestedBrackets() string {
	return "name: x\nload: " + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + "\n"
}

// billionLaughs is the classic alias bomb: ten aliases of ten aliases of
// ... of ten strings, 10^9 values expanded, in under 1 KB.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("name: x\ndescription: laughs\nload:\n  requests:\n    - path: /\n      tags: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "    - path: /%d\n      tags: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	return b.String()
}

func TestHostileYAMLIsRefusedCheaply(t *testing.T) {
	var deep strings.Builder
	deep.WriteString("name: x\nload:\n")
	for i := range MaxDepth + 5 {
		fmt.Fprintf(&deep, "%sk%d:\n", strings.Repeat(" ", 2*(i+1)), i)
	}
	tests := []struct {
		name, src, want string
	}{
		{"nested brackets", nestedBrackets(), "s.yaml:2:71: mappings and lists nest more than 64 deep here"},
		{"billion laughs", billionLaughs(), "with its aliases expanded the file holds more than 100000 values"},
		{"a long flow list", "name: x\nload: [" + strings.Repeat("a,", MaxNodes) + "a]\n", "s.yaml:2:"},
		{"deep block nesting", deep.String(), "mappings and lists nest more than 64 deep here"},
		{"brackets from a variable", "vars: {v: \"" + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\"}\nname: x\nload: {rate: ${v}}\n",
			"s.yaml:3:14: mappings and lists nest more than 64 deep here"},
		{"a variable used a million times over", "vars: {v: \"" + strings.Repeat("x", 1000) + "\"}\nname: x\ndescription: " + strings.Repeat("${v}", 5000) + "\n",
			"with its variables filled in, the file is larger than the 4 MiB a scenario file may hold"},
	}
	// What refusing costs is measured in bytes allocated, which depend on
	// the code alone, not in time, which depends on what else the machine
	// does. Today the dearest case (nested brackets) takes 18 MB; before the
	// bounds it took 1.4 GB, and the regexp that found ${name} took 96 MB
	// on the variable case under the race detector.
	const maxAlloc = 40e6
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := Parse("s.yaml", []byte(tt.src), demoCatalog)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes refused in %v, %.1f MB allocated", len(tt.src), took, float64(alloc)/1e6)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !IsInvalid(err) {
				t.Fatalf("err = %.500v\nwant %s", err, tt.want)
			}
			if alloc > maxAlloc {
				t.Errorf("refusing it allocated %.1f MB, want under %.0f MB", float64(alloc)/1e6, maxAlloc/1e6)
			}
		})
	}
}

// TestAliasesWithinTheBoundLoad checks the bounds leave ordinary anchors
// and merge keys alone.
func TestAliasesWithinTheBoundLoad(t *testing.T) {
	src := strings.Replace(good, "    - path: /products/{1..3}", "    - &get\n      path: /products/{1..3}\n      tags: &t [read]\n    - <<: *get\n      method: HEAD\n      headers: {X-Tags: x}\n    - {path: /x, tags: *t}", 1)
	sc, err := Parse("s.yaml", []byte(src), demoCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if r := sc.Load.Requests; len(r) != 3 || r[1].Method != "HEAD" || r[1].Path != "/products/{1..3}" || r[1].Tags[0] != "read" || r[2].Tags[0] != "read" {
		t.Errorf("requests %+v", r)
	}
}

// BenchmarkParse measures the load of the nested-bracket file, the
// billion laughs and, as the peer they are read against, an ordinary
// scenario: go test -bench Parse -benchmem ./scenarios.
func BenchmarkParse(b *testing.B) {
	for _, bb := range []struct{ name, src string }{
		{"good", good}, {"nested", nestedBrackets()}, {"laughs", billionLaughs()},
	} {
		b.Run(bb.name, func(b *testing.B) {
			data := []byte(bb.src)
			for b.Loop() {
				Parse("s.yaml", data, demoCatalog)
			}
		})
	}
}

// TestVarRefsFindWhatTheGrammarSays checks the scanner of ${name} and $$
// against the grammar written as a regexp.
func TestVarRefsFindWhatTheGrammarSays(t *testing.T) {
	grammar := regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_.-]*)\}`)
	for _, text := range []string{
		"", "$", "$$", "$$$", "$$$$", "${a}", "${}", "${1a}", "${a1.b-c_d}", "${a b}", "${a", "$${a}", "$$${a}",
		"x ${a} y ${b}z", "${a}${b}", "${${a}}", "$ {a}", "${_}", "${a}}", "${ä}", "{a}", "rate: ${rate}/s, $$5",
	} {
		got := varRefs([]byte(text))
		want := grammar.FindAllSubmatchIndex([]byte(text), -1)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("varRefs(%q) = %v, want %v", text, got, want)
		}
	}
}
