package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDistributions compiles each distribution on a failpoint and on a
// proxy, the histogram read from a file next to the scenario.
func TestDistributions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "payments.hist"), []byte("# from last week's traces\n10ms 90\n50ms 9\n1s 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(depsScenario, "%s", `      - {proxy: pg, action: latency, for: 1s, distribution: {type: lognormal, median: 20ms, p99: 200ms}}
      - {proxy: pg, action: latency, after: 1s, direction: upstream, distribution: {type: histogram, file: payments.hist}}
      - {point: store/query, action: latency, distribution: {type: normal, mean: 20ms, stddev: 5ms}}`, 1)
	name := filepath.Join(dir, "s.yaml")
	sc, err := Parse(name, []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := sc.Phases[0].Faults
	if f[0].Net == nil || f[0].Net.Distribution != "lognormal/20ms/200ms" || f[0].Term != "proxy pg latency lognormal median 20ms p99 200ms" {
		t.Errorf("proxy fault: %+v %q", f[0].Net, f[0].Term)
	}
	if f[1].Net == nil || f[1].Net.Distribution != "histogram/10ms=90/50ms=9/1s=1" {
		t.Errorf("histogram: %+v", f[1].Net)
	}
	if want := `return("store/query|latency:normal/20ms/5ms")`; f[2].Term != want {
		t.Errorf("marker term %s, want %s", f[2].Term, want)
	}

	// Judging a saved run reads no histogram file.
	if err := os.Remove(filepath.Join(dir, "payments.hist")); err != nil {
		t.Fatal(err)
	}
	sc, err = Parse(name, []byte(src), Options{SkipBodyFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Phases[0].Faults[1].Term; got != "proxy pg latency histogram of payments.hist (not read) upstream" {
		t.Errorf("unread histogram's term %q", got)
	}
}

// TestHistogramFileErrors checks that a histogram file that cannot be read,
// is too large or holds no histogram is refused at the file's line.
func TestHistogramFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.hist", strings.Repeat("# padding padding padding\n", 3000))
	write("bad.hist", "10ms 90\n5ms 1\n")
	if err := os.Mkdir(filepath.Join(dir, "dir.hist"), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"big.hist":  `s.yaml:22:76: cannot read histogram file big.hist: larger than 64 KiB (merge buckets: at most 256 lines)`,
		"bad.hist":  `s.yaml:22:76: histogram file bad.hist: bucket 2's bound 5ms is not above 10ms`,
		"dir.hist":  `s.yaml:22:76: cannot read histogram file dir.hist: not a regular file but a directory (a histogram file is a regular file of lines such as "10ms 90")`,
		"none.hist": `s.yaml:22:76: cannot read histogram file none.hist: no such file or directory (the path is relative to the scenario file)`,
	} {
		src := strings.Replace(depsScenario, "%s", `      - {proxy: pg, action: latency, distribution: {type: histogram, file: `+file+`}}`, 1)
		_, err := Parse(filepath.Join(dir, "s.yaml"), []byte(src), Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", file, err, want)
		}
		if !IsInvalid(err) {
			t.Errorf("%s: not invalid input", file)
		}
	}
}

// TestFailpointMatch compiles a failpoint fault meant for tenant b's
// requests into a term that names the header.
func TestFailpointMatch(t *testing.T) {
	src := strings.Replace(depsScenario, "%s", `      - {point: store/query, action: status, value: "503", probability: 0.5, match: {headers: {X-Tenant: b}}}`, 1)
	sc, err := Parse("s.yaml", []byte(src), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Phases[0].Faults[0].Term, `50%return("store/query|when:X-Tenant=b|status:503")`; got != want {
		t.Errorf("term %s, want %s", got, want)
	}
}
