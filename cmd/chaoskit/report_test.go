package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportReproducesRun runs the bundled scenario with every report
// format, then judges the saved run again from disk: the verdicts match.
func TestReportReproducesRun(t *testing.T) {
	bin := chaoskitBin(t)
	t.Parallel()
	out := t.TempDir()
	res := runBin(t, bin, "run", scenarioFile, "--report-dir", out, "--format", "table,json,junit,markdown,html")
	if res.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, f := range []string{"report.json", "junit.xml", "report.md", "report.html"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	ran := readReport(t, out)
	again := t.TempDir()
	res = runBin(t, bin, "report", filepath.Join(out, "db-timeout-serves-cache"), "--report-dir", again)
	if res.code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	judged := readReport(t, again)
	if fmt.Sprint(verdicts(ran)) != fmt.Sprint(verdicts(judged)) {
		t.Errorf("run judged %v, report judged %v", verdicts(ran), verdicts(judged))
	}
}

func verdicts(r reportJSON) []string {
	var out []string
	for _, s := range r.Scenarios {
		out = append(out, s.Name+"="+s.Verdict)
		for _, c := range s.Contracts {
			out = append(out, c.Name+"="+c.Verdict+" "+c.Measured)
		}
	}
	return out
}

// TestWriteIntegrityAgainstTheDemo runs the orders scenario against the
// correct demo, which keeps every order it acknowledges, and against the
// variant that acknowledges orders before committing them, whose lost
// orders the contract must name.
func TestWriteIntegrityAgainstTheDemo(t *testing.T) {
	bin := chaoskitBin(t)
	src, err := os.ReadFile(filepath.Join("testdata", "orders-no-write-lost.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args string
		code int
		want string
	}{
		{"correct", "[]", 0, "pass"},
		{"ack before commit", "[--ack-before-commit]", 1, "fail"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := filepath.Join(dir, "orders.yaml")
			if err := os.WriteFile(file, bytes.Replace(src, []byte("args: []"), []byte("args: "+tt.args), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			res := runBin(t, bin, "run", file, "--report-dir", dir)
			if res.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", res.code, tt.code, res.stdout, res.stderr)
			}
			rep := readReport(t, dir)
			c := rep.Scenarios[0].Contracts[0]
			if c.Name != "no acknowledged order is lost" || c.Verdict != tt.want {
				t.Fatalf("write contract = %+v", c)
			}
			if tt.want == "pass" {
				return
			}
			var full struct {
				Scenarios []struct {
					Contracts []struct {
						Checks []struct {
							Samples    int `json:"samples"`
							Violations []struct {
								Target string `json:"target"`
								Status int    `json:"status"`
								Detail string `json:"detail"`
							} `json:"violations"`
						} `json:"checks"`
					} `json:"contracts"`
				} `json:"scenarios"`
			}
			data, _ := os.ReadFile(filepath.Join(dir, "report.json"))
			if err := json.Unmarshal(data, &full); err != nil {
				t.Fatal(err)
			}
			check := full.Scenarios[0].Contracts[0].Checks[0]
			if len(check.Violations) == 0 || !strings.HasPrefix(c.Measured, fmt.Sprintf("%d lost, ", len(check.Violations))) || !strings.HasSuffix(c.Measured, fmt.Sprintf(" of %d acknowledged", check.Samples)) {
				t.Fatalf("measured %q with %d lost writes listed", c.Measured, len(check.Violations))
			}
			for _, v := range check.Violations {
				if v.Target != "POST /orders" || v.Status != 201 || !strings.HasPrefix(v.Detail, "missing: GET /orders/o-") {
					t.Errorf("lost write = %+v", v)
				}
			}
		})
	}
}
