package main

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/plan"
)

// brokenVariant is one row of the broken-variants table of
// docs/scenarios.md: a bundled contract, the demo flag that breaks it, and
// the verdict it must then get.
type brokenVariant struct {
	scenario, contract, flag, verdict string
}

// readBrokenVariants parses the broken-variants table of docs/scenarios.md,
// so the documentation and this test cannot drift apart.
func readBrokenVariants(t *testing.T) []brokenVariant {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []brokenVariant
	in := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- broken-variants:start -->":
			in = true
		case line == "<!-- broken-variants:end -->":
			in = false
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 4 {
				t.Fatalf("docs/scenarios.md:%d: row has %d cells, want 4 (scenario, contract, broken variant, verdict)", n, len(cells))
			}
			trim := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
			r := brokenVariant{scenario: trim(cells[0]), contract: trim(cells[1]), flag: trim(cells[2]), verdict: trim(cells[3])}
			if r.verdict != "fail" && r.verdict != "inconclusive" {
				t.Fatalf("docs/scenarios.md:%d: verdict %q, want fail or inconclusive", n, r.verdict)
			}
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		t.Fatal("docs/scenarios.md has no broken-variants table")
	}
	return rows
}

func bundledNames(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "scenarios", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// maxHTMLPerScenario bounds the HTML report's size, per scenario, of a
// passing run of the bundled scenarios.
const maxHTMLPerScenario = 36 << 10

// TestBundledSuitePasses runs every bundled scenario against the correct
// demo, as `make demo` does, with a plain build of chaoskit (go build, go
// install: no failpoint rewriting): every contract must pass, with the output
// piped (make demo | cat, a CI log) no line is wider than 120 columns, and
// the HTML report keeps within maxHTMLPerScenario a scenario.
func TestBundledSuitePasses(t *testing.T) {
	bin := chaoskitBin(t)
	if v := runBin(t, bin, "version", "-o", "json"); v.code != 0 || !strings.Contains(v.stdout, `"markers_rewritten": false`) {
		t.Fatalf("chaoskit version: exit %d %s %s; want a plain build", v.code, v.stdout, v.stderr)
	}
	out := t.TempDir()
	res := runBinEnv(t, []string{"COLUMNS="}, bin, "run", "--bundled", "--report-dir", out, "--format", "table,json,junit,markdown,html")
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, printed := range []string{res.stdout, res.stderr} {
		if line, n := widest(printed); n > 120 {
			t.Errorf("a line is %d columns wide, more than 120: %q", n, line)
		}
	}
	rep := readReport(t, out)
	var got []string
	for _, s := range rep.Scenarios {
		got = append(got, s.Name)
		if s.Verdict != "pass" {
			t.Errorf("%s: %s", s.Name, s.Verdict)
		}
	}
	// The HTML page stays small enough to attach to a CI job and open at
	// once: it was 1.3 MB for the ten scenarios while it drew a point and
	// a title per bucket and series (docs/report-schema.md says what it holds).
	if st, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Error(err)
	} else if limit := int64(len(rep.Scenarios)) * maxHTMLPerScenario; st.Size() > limit {
		t.Errorf("report.html is %d bytes for %d scenarios, more than %d", st.Size(), len(rep.Scenarios), limit)
	}
	sort.Strings(got)
	if want := bundledNames(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("--bundled ran %v, the scenarios directory holds %v", got, want)
	}
}

// demoArgs is the one line of a bundled scenario that gives the demo's
// flags.
var demoArgs = regexp.MustCompile(`(?m)^    args: \[(.*)\]$`)

// withDemoFlag returns the scenario src with flag added to its demo's args.
func withDemoFlag(t *testing.T, name string, src []byte, flag string) []byte {
	t.Helper()
	m := demoArgs.FindAllSubmatchIndex(src, -1)
	if len(m) != 1 {
		t.Fatalf("%s.yaml does not give its demo args on one `    args: [...]` line", name)
	}
	args := strings.TrimSpace(string(src[m[0][2]:m[0][3]]))
	if args != "" {
		args += ", "
	}
	args += strconv.Quote(flag)
	out := append([]byte{}, src[:m[0][2]]...)
	out = append(out, args...)
	return append(out, src[m[0][3]:]...)
}

// TestBundledContractsFailAgainstBrokenVariants proves that no bundled
// contract is toothless: every contract of every bundled scenario has a row
// in docs/scenarios.md naming a broken variant of the demo, and against it
// gets the verdict the row says. Each variant runs once, with all the
// scenarios it breaks; the variants run side by side as far as -parallel
// allows.
func TestBundledContractsFailAgainstBrokenVariants(t *testing.T) {
	bin := chaoskitBin(t)
	rows := readBrokenVariants(t)
	bundled, err := plan.Bundled(plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	contracts := map[[2]string]bool{}
	for _, sc := range bundled {
		for _, c := range sc.Contracts {
			contracts[[2]string{sc.Name, c.Name}] = true
		}
	}
	covered := map[[2]string]bool{}
	byFlag := map[string][]brokenVariant{}
	for _, r := range rows {
		key := [2]string{r.scenario, r.contract}
		if !contracts[key] {
			t.Errorf("docs/scenarios.md names contract %q of %s, which no bundled scenario has", r.contract, r.scenario)
		}
		covered[key] = true
		byFlag[r.flag] = append(byFlag[r.flag], r)
	}
	for key := range contracts {
		if !covered[key] {
			t.Errorf("bundled contract %q of %s has no broken variant in docs/scenarios.md", key[1], key[0])
		}
	}
	for _, flag := range slices.Sorted(maps.Keys(byFlag)) {
		want := byFlag[flag]
		t.Run(flag, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			in := filepath.Join(dir, "scenarios")
			if err := os.Mkdir(in, 0o755); err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, r := range want {
				if names[r.scenario] {
					continue
				}
				names[r.scenario] = true
				src, err := os.ReadFile(filepath.Join(repoRoot(t), "scenarios", r.scenario+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(in, r.scenario+".yaml"), withDemoFlag(t, r.scenario, src, flag), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(dir, "out")
			res := runBin(t, bin, "run", in, "--keep-going", "--report-dir", out)
			if res.code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			got := map[[2]string]string{}
			measured := map[[2]string]string{}
			for _, s := range readReport(t, out).Scenarios {
				for _, c := range s.Contracts {
					got[[2]string{s.Name, c.Name}] = c.Verdict
					measured[[2]string{s.Name, c.Name}] = c.Measured
				}
			}
			for _, r := range want {
				key := [2]string{r.scenario, r.contract}
				if v, ok := got[key]; !ok {
					t.Errorf("%s: contract %q was not judged\n%s", r.scenario, r.contract, res.stderr)
				} else if v != r.verdict {
					t.Errorf("%s: contract %q: %s (%s), want %s", r.scenario, r.contract, v, measured[key], r.verdict)
				}
			}
		})
	}
}
