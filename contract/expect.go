package contract

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/chaoskit/chaoskit/timeline"
)

// quantified matches `PREDICATE for >= 99%`.
var quantified = regexp.MustCompile(`(?s)^(.+?)\s+for\s*(>=|<=|>|<|==)\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$`)

// durationLit matches a duration literal such as 150ms outside quotes.
var durationLit = regexp.MustCompile(`\b([0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))\b`)

// check is one compiled expectation.
type check struct {
	src       string
	predicate *vm.Program
	op        string
	percent   float64
}

// reqEnv is what a predicate sees: one request.
type reqEnv struct {
	Status  int           `expr:"status"`
	Latency time.Duration `expr:"latency"`
	Body    string        `expr:"body"`
	Method  string        `expr:"method"`
	URL     string        `expr:"url"`
	Target  string        `expr:"target"`
	Phase   string        `expr:"phase"`
	Error   string        `expr:"error"`
	// Header returns a kept response header, "" when absent.
	Header func(string) string `expr:"header"`
	// Baseline returns the body this request's target got in the named
	// earlier phase (its last 2xx response there), or nil.
	Baseline func(string) any `expr:"baseline"`
}

// SyntaxError is an expectation that does not parse, with the column
// (1-based, within the expectation) where the problem is.
type SyntaxError struct {
	Column int
	Msg    string
	Hint   string
}

func (e *SyntaxError) Error() string {
	if e.Hint != "" {
		return e.Msg + " (" + e.Hint + ")"
	}
	return e.Msg
}

// compileCheck parses one expectation.
func compileCheck(src string) (*check, error) {
	m := quantified.FindStringSubmatch(strings.TrimSpace(src))
	if m == nil {
		return nil, &SyntaxError{Column: 1, Msg: fmt.Sprintf("expectation %q has no quantifier", src),
			Hint: "write PREDICATE for >= 99%, e.g. status == 200 for >= 99%"}
	}
	pct, _ := strconv.ParseFloat(m[3], 64)
	if pct > 100 {
		return nil, &SyntaxError{Column: strings.LastIndex(src, m[3]) + 1, Msg: fmt.Sprintf("share %s%% is above 100%%", m[3])}
	}
	pred := rewriteDurations(m[1])
	prog, err := expr.Compile(pred, expr.Env(reqEnv{}), expr.AsBool())
	if err != nil {
		se := &SyntaxError{Column: 1, Msg: firstLine(err.Error())}
		var fe *file.Error
		if errors.As(err, &fe) && pred == m[1] {
			se.Column = fe.Column + 1
			se.Msg = fe.Message
		}
		se.Hint = "a predicate sees status, latency, body, method, url, target, phase, error, header(\"Name\") and baseline(\"phase\")"
		return nil, se
	}
	return &check{src: src, predicate: prog, op: m[2], percent: pct}, nil
}

// rewriteDurations turns duration literals outside string literals into
// duration("...") calls.
func rewriteDurations(s string) string {
	var b strings.Builder
	inQuote := byte(0)
	start := 0
	flush := func(end int) {
		b.WriteString(durationLit.ReplaceAllString(s[start:end], `duration("$1")`))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote != 0:
			if c == '\\' {
				i++
			} else if c == inQuote {
				inQuote = 0
				b.WriteString(s[start : i+1])
				start = i + 1
			}
		case c == '"' || c == '\'' || c == '`':
			flush(i)
			start = i
			inQuote = c
		}
	}
	if inQuote != 0 {
		b.WriteString(s[start:])
	} else {
		flush(len(s))
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// holds reports whether share (0..100) satisfies the check's quantifier.
func (c *check) holds(share float64) bool {
	const eps = 1e-9
	switch c.op {
	case ">=":
		return share+eps >= c.percent
	case ">":
		return share > c.percent+eps
	case "<=":
		return share <= c.percent+eps
	case "<":
		return share+eps < c.percent
	default:
		return abs(share-c.percent) < eps
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// evaluate judges the check over the window's requests.
func (c *check) evaluate(reqs []timeline.Request, w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + formatPct(c.percent), Samples: len(reqs)}
	var machine vm.VM
	for i := range reqs {
		r := &reqs[i]
		env := reqEnv{
			Status: r.Status, Latency: r.Latency, Body: r.Body, Method: r.Method, URL: r.URL,
			Target: r.Target, Phase: r.Phase, Error: r.Error,
			Header:   r.Header,
			Baseline: func(phase string) any { return w.baseline(phase, r.Target) },
		}
		out, err := machine.Run(c.predicate, env)
		ok, _ := out.(bool)
		if err == nil && ok {
			res.Matched++
			continue
		}
		if len(res.Violations) < MaxViolations {
			res.Violations = append(res.Violations, w.violation(r))
		}
	}
	if res.Samples == 0 {
		res.Outcome = Inconclusive
		res.Measured = "no requests"
		res.Reason = "no requests in the window"
		return res
	}
	share := 100 * float64(res.Matched) / float64(res.Samples)
	res.Measured = fmt.Sprintf("%s (%d/%d)", formatPct(share), res.Matched, res.Samples)
	res.Margin = share - c.percent
	if c.op == "<" || c.op == "<=" {
		res.Margin = -res.Margin
	}
	if c.holds(share) {
		res.Outcome = Pass
	} else {
		res.Outcome = Fail
	}
	return res
}

func formatPct(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64) + "%"
}
