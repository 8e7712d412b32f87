package main

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// brokenVariant is one row of the table in docs/scenarios.md: the bundled
// scenario, the demo flag that breaks it, and the contract that must fail.
type brokenVariant struct {
	scenario, flag, contract string
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
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "<!-- broken-variants:start -->":
			in = true
		case line == "<!-- broken-variants:end -->":
			in = false
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 4 {
				t.Fatalf("docs/scenarios.md: row %q has %d cells, want 4", line, len(cells))
			}
			trim := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
			rows = append(rows, brokenVariant{scenario: trim(cells[0]), flag: trim(cells[2]), contract: trim(cells[3])})
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

// TestBundledSuitePasses runs every bundled scenario against the correct
// demo, as `make demo` does: every contract must pass.
func TestBundledSuitePasses(t *testing.T) {
	bin := chaoskitBin(t)
	out := t.TempDir()
	res := runBin(t, bin, "run", "--bundled", "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	rep := readReport(t, out)
	var got []string
	for _, s := range rep.Scenarios {
		got = append(got, s.Name)
		if s.Verdict != "pass" {
			t.Errorf("%s: %s", s.Name, s.Verdict)
		}
	}
	sort.Strings(got)
	if want := bundledNames(t); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("--bundled ran %v, the scenarios directory holds %v", got, want)
	}
}

// TestBundledScenariosFailAgainstBrokenVariants runs every bundled scenario
// against the broken demo variant the documentation names, and checks the
// named contract fails: no bundled contract is toothless.
func TestBundledScenariosFailAgainstBrokenVariants(t *testing.T) {
	bin := chaoskitBin(t)
	rows := readBrokenVariants(t)
	covered := map[string]bool{}
	for _, r := range rows {
		covered[r.scenario] = true
	}
	for _, name := range bundledNames(t) {
		if !covered[name] {
			t.Errorf("bundled scenario %s has no broken variant in docs/scenarios.md", name)
		}
	}
	for _, r := range rows {
		t.Run(r.scenario+"/"+r.flag, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(repoRoot(t), "scenarios", r.scenario+".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(src), "    args: []\n") != 1 {
				t.Fatalf("%s.yaml does not write its demo args as one `args: []` line", r.scenario)
			}
			broken := strings.Replace(string(src), "    args: []\n", `    args: ["`+r.flag+`"]`+"\n", 1)
			dir := t.TempDir()
			file := filepath.Join(dir, r.scenario+".yaml")
			if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			res := runBin(t, bin, "run", file, "--report-dir", filepath.Join(dir, "out"))
			if res.code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
			}
			rep := readReport(t, filepath.Join(dir, "out"))
			for _, c := range rep.Scenarios[0].Contracts {
				if c.Name == r.contract {
					if c.Verdict != "fail" {
						t.Errorf("contract %q: %s (%s), want fail", c.Name, c.Verdict, c.Measured)
					}
					return
				}
			}
			t.Errorf("scenario %s has no contract %q", r.scenario, r.contract)
		})
	}
}
