package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/contract"
)

// The JUnit XML a CI system reads: one testsuite per scenario, one testcase
// per contract. A failed contract is a <failure> with its evidence; an
// inconclusive one is an <error> (the run could not tell, which CI must not
// take for a pass); a run that broke adds an <error> testcase named "run".
// The shape follows the common JUnit schema that Jenkins, GitLab and
// GitHub test reporters accept; each testcase also carries the file and
// line of its contract, as pytest writes them, which GitLab and GitHub test
// reporters read to link a failure to its source.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	File       string          `xml:"file,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	// SystemOut holds the scenario's findings, one per line: what a
	// reviewer should know that no contract judged.
	SystemOut string `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *Report) error {
	out := junitSuites{Name: "chaoskit", Time: seconds(r.Duration)}
	for _, s := range r.Scenarios {
		suite := junitSuite{Name: s.Name, File: s.File, Time: seconds(scenarioDuration(s))}
		if !s.Start.IsZero() {
			suite.Timestamp = s.Start.UTC().Format("2006-01-02T15:04:05")
		}
		if s.RunDir != "" {
			suite.Properties = append(suite.Properties, junitProperty{"run_dir", s.RunDir})
		}
		suite.Properties = append(suite.Properties, junitProperty{"verdict", string(s.Verdict)})
		if s.Error != "" {
			suite.Cases = append(suite.Cases, junitCase{Name: "run", ClassName: "chaoskit." + s.Name, File: s.File, Time: "0.000",
				Error: &junitProblem{Type: "run", Message: s.Error, Text: s.Error}})
			suite.Errors++
		}
		for _, c := range s.Contracts {
			tc := junitCase{Name: c.Name, ClassName: "chaoskit." + s.Name, File: c.Position.File, Line: c.Position.Line,
				Time: seconds(c.End.Sub(c.Start)), SystemOut: evidenceText(c)}
			if tc.File == "" {
				tc.File = s.File
			}
			switch c.Outcome {
			case contract.Fail:
				tc.Failure = &junitProblem{Type: "fail", Message: verdictLine(c), Text: evidenceText(c)}
				suite.Failures++
			case contract.Inconclusive:
				tc.Error = &junitProblem{Type: "inconclusive", Message: "inconclusive: " + c.Reason, Text: evidenceText(c)}
				suite.Errors++
			}
			if tc.Failure != nil || tc.Error != nil {
				tc.SystemOut = ""
			}
			suite.Cases = append(suite.Cases, tc)
		}
		for _, f := range s.Findings {
			suite.SystemOut += "finding: " + f.Message + "\n"
		}
		suite.Tests = len(suite.Cases)
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Errors += suite.Errors
		out.Suites = append(out.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// scenarioDuration is the span of the scenario's phases.
func scenarioDuration(s ScenarioReport) time.Duration {
	var end time.Duration
	for _, p := range s.Phases {
		end = max(end, p.Start+p.Duration)
	}
	return end
}

// verdictLine is a contract's verdict in one line: the decisive check.
func verdictLine(c contract.Verdict) string {
	for _, ch := range c.Checks {
		if ch.Outcome == contract.Fail {
			return fmt.Sprintf("%s: measured %s, expected %s", ch.Expect, ch.Measured, ch.Expected)
		}
	}
	return fmt.Sprintf("measured %s, expected %s", c.Measured, c.Expected)
}

// evidenceText is a contract's evidence as plain text: each check with its
// figures, then the first violating requests of each failing check.
func evidenceText(c contract.Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "window %s, %d requests\n", c.Window, c.Samples)
	if c.Reason != "" {
		fmt.Fprintf(&b, "inconclusive: %s\n", c.Reason)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, ch := range c.Checks {
		fmt.Fprintf(&b, "%s  %s: measured %s, expected %s (%d samples)\n", strings.ToUpper(string(ch.Outcome)), ch.Expect, ch.Measured, ch.Expected, ch.Samples)
		if ch.Reason != "" && ch.Reason != c.Reason {
			fmt.Fprintf(&b, "  %s\n", ch.Reason)
		}
		if ch.Outcome != contract.Fail {
			continue
		}
		for _, v := range ch.Violations {
			fmt.Fprintf(&b, "  %s\n", ViolationText(v))
		}
	}
	return b.String()
}
