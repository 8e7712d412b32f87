package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/chaoskit/chaoskit/timeline"
)

// quantified matches `PREDICATE for >= 99%`.
var quantified = regexp.MustCompile(`(?s)^(.+?)\s+for\s*(>=|<=|>|<|==)\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$`)

// durationLit matches a duration literal such as 150ms outside quotes.
var durationLit = regexp.MustCompile(`\b([0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))\b`)

// quantifiedCheck is `PREDICATE for >= 99%`: a share of the window's
// requests that must satisfy an expr-lang predicate.
type quantifiedCheck struct {
	src       string
	predicate *vm.Program
	op        string
	percent   float64
	// readsAge is set when the predicate uses age: a request whose age
	// header states no age then breaks it, whatever the predicate says.
	readsAge bool
	// readsBaseline is set when the predicate calls baseline: the run's
	// baseline bodies are then gathered before the pass (see Judge).
	readsBaseline bool
	// readsFaults is set when the predicate reads faults, which takes a
	// list per request.
	readsFaults bool
	// readsSinceFault is set when the predicate reads since_fault: a
	// window in which no request was sent with a fault on then has
	// nothing to measure it from.
	readsSinceFault bool
}

// reqEnv is what a predicate sees: one request.
type reqEnv struct {
	Status  int           `expr:"status"`
	Latency time.Duration `expr:"latency"`
	Body    string        `expr:"body"`
	Method  string        `expr:"method"`
	URL     string        `expr:"url"`
	Path    string        `expr:"path"`
	Target  string        `expr:"target"`
	Phase   string        `expr:"phase"`
	Error   string        `expr:"error"`
	Tags    []string      `expr:"tags"`
	// GRPCCode is the name of a gRPC call's code ("OK", "UNAVAILABLE"),
	// "" for an HTTP request and for a call the server gave no answer to
	// (timeline.Request.GRPCCode).
	GRPCCode string `expr:"grpc_code"`
	// Class is the request's class ("primary", "fallback", "rejected",
	// "error", "timeout"); Source the source that served it.
	Class  string `expr:"class"`
	Source string `expr:"source"`
	// Age is the age of a served copy (0 when the response is not one).
	Age time.Duration `expr:"age"`
	// Faults names the faults that were on when the request was sent.
	Faults []string `expr:"faults"`
	// SinceFault is how long the longest-standing fault on when the
	// request was sent had been on: measured by chaoskit from when its
	// control endpoint or proxy acknowledged it, not taken from the
	// service. 0 when no fault was on. A copy a cache serves 1.5 s into
	// an outage of its only source is at least 1.5 s old, whatever its age
	// header says.
	SinceFault time.Duration `expr:"since_fault"`
	// Header returns a kept response header, "" when absent.
	Header func(string) string `expr:"header"`
	// JSON returns the value at a dotted path in the JSON body, nil when
	// the path is not there; an error, which breaks the predicate, when
	// the body is not JSON or was not kept.
	JSON func(string) (any, error) `expr:"json"`
	// Baseline returns the body this request's target got in the named
	// phase (its last 2xx response there); an error, which breaks the
	// predicate, when it got none there.
	Baseline func(string) (any, error) `expr:"baseline"`
}

// predicateNames is the hint a predicate error carries.
const predicateNames = `a predicate sees status, latency, class, source, age, since_fault, body, method, path, url, target, phase, error, tags, faults, grpc_code, header("Name"), json("a.b") and baseline("phase")`

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

// compileCheck parses one expectation: a quantified predicate, else one of
// the fixed forms (aggregates, times, breaker transitions, writes).
func compileCheck(src string) (check, error) {
	trimmed := strings.TrimSpace(src)
	if m := quantified.FindStringSubmatch(trimmed); m != nil {
		return compileQuantified(src, m)
	}
	return compileForm(src)
}

func compileQuantified(src string, m []string) (check, error) {
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
			se.Column = fe.Column + 1 + strings.Index(src, m[1])
			se.Msg = fe.Message
		}
		se.Hint = predicateNames
		return nil, se
	}
	return &quantifiedCheck{src: src, predicate: prog, op: m[2], percent: pct, readsAge: uses(prog, "age"), readsBaseline: uses(prog, "baseline"),
		readsFaults: uses(prog, "faults"), readsSinceFault: uses(prog, "since_fault")}, nil
}

// uses reports whether a compiled predicate reads the named variable.
func uses(prog *vm.Program, name string) bool {
	node := prog.Node()
	v := &identFinder{name: name}
	ast.Walk(&node, v)
	return v.found
}

type identFinder struct {
	name  string
	found bool
}

func (f *identFinder) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && id.Value == f.name {
		f.found = true
	}
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

// compare reports whether got OP want holds.
func compare(got float64, op string, want float64) bool {
	const eps = 1e-9
	switch op {
	case ">=":
		return got+eps >= want
	case ">":
		return got > want+eps
	case "<=":
		return got <= want+eps
	case "<":
		return got+eps < want
	case "!=":
		return math.Abs(got-want) >= eps
	default:
		return math.Abs(got-want) < eps
	}
}

// margin is how far got is on the good side of want, in percent of want
// (in points when want is 0); negative when the comparison fails.
func margin(got float64, op string, want float64) float64 {
	d := got - want
	switch op {
	case "<", "<=":
		d = -d
	case "==", "!=":
		d = -math.Abs(d)
		if op == "!=" {
			d = -d
		}
	}
	if want != 0 {
		return 100 * d / math.Abs(want)
	}
	return d
}

// quantifiedAcc runs the predicate on each request of the window. The
// functions a predicate may call are made once and read the request in
// hand (cur), so that a request costs no allocation of its own.
type quantifiedAcc struct {
	c       *quantifiedCheck
	w       *window
	machine vm.VM
	res     CheckResult
	cur     *timeline.Request
	env     reqEnv
	// faulted counts the window's requests sent with a fault on.
	faulted int
	// noBaseline is set while a request's predicate asks for a baseline
	// its target does not have; unknown counts those requests, which the
	// predicate can neither pass nor fail, and why says the first one's.
	noBaseline bool
	unknown    int
	why        string
}

func (c *quantifiedCheck) start(w *window) acc {
	a := &quantifiedAcc{c: c, w: w, res: CheckResult{Expect: c.src, Expected: c.op + " " + formatPct(c.percent)}}
	a.env.Header = func(name string) string { return a.cur.Header(name) }
	a.env.JSON = func(path string) (any, error) { return bodyJSON(a.cur, path) }
	a.env.Baseline = func(phase string) (any, error) {
		if b := w.baseline(phase, a.cur.Target); b != nil {
			return b, nil
		}
		a.noBaseline = true
		return nil, fmt.Errorf("no baseline: %s got no 2xx answer in phase %q to compare with", a.cur.Target, phase)
	}
	return a
}

func (a *quantifiedAcc) add(r *timeline.Request, in bool, k *classed) {
	if !in {
		return
	}
	w, res := a.w, &a.res
	res.Samples++
	age, _, ageErr := w.spec.Classify.Age(r)
	if ageErr != nil && a.c.readsAge {
		// No age can satisfy a predicate on age, nor be shown to.
		if len(res.Violations) < MaxViolations {
			v := w.violation(r, k)
			v.Detail = ageErr.Error()
			res.Violations = append(res.Violations, v)
		}
		return
	}
	cl, src := k.get()
	a.cur = r
	env := &a.env
	env.Status, env.Latency, env.Body, env.Method, env.URL, env.Path = r.Status, r.Latency, r.Body, r.Method, r.URL, requestPath(r)
	env.Target, env.Phase, env.Error, env.Tags, env.GRPCCode = r.Target, r.Phase, r.Error, r.Tags, r.GRPCCode()
	env.Class, env.Source, env.Age, env.Faults, env.SinceFault = string(cl), src, age, nil, 0
	if a.c.readsFaults {
		env.Faults = faultsAt(w.faults, r.Time)
	}
	if a.c.readsSinceFault {
		var on bool
		env.SinceFault, on = sinceFault(w.faults, r.Time)
		if on {
			a.faulted++
		}
	}
	a.noBaseline = false
	out, err := a.machine.Run(a.c.predicate, env)
	ok, _ := out.(bool)
	if err == nil && ok {
		res.Matched++
		return
	}
	if a.noBaseline {
		// Nothing to compare with is not evidence either way: the
		// share is judged on both ends (see result).
		a.unknown++
		if a.why == "" {
			a.why = firstLine(err.Error())
			var fe *file.Error
			if errors.As(err, &fe) {
				a.why = fe.Message
			}
		}
		return
	}
	if len(res.Violations) < MaxViolations {
		v := w.violation(r, k)
		if err != nil {
			// What the predicate could not read: a body that is not
			// JSON, a baseline that is not there.
			v.Detail = firstLine(err.Error())
			var fe *file.Error
			if errors.As(err, &fe) {
				v.Detail = fe.Message
			}
		}
		res.Violations = append(res.Violations, v)
	}
}

// bodyJSON is json("path") of r: the value at path in its JSON body, nil
// when the body has no such path, an error when the body is not JSON or
// was not kept, so that no predicate passes on what it could not read.
func bodyJSON(r *timeline.Request, path string) (any, error) {
	if v, ok := JSONPath(r.Body, path); ok {
		return v, nil
	}
	switch {
	case r.BodySize > timeline.MaxBody:
		return nil, fmt.Errorf("json(%q): the body (%d bytes) was not kept, the run keeps %d", path, r.BodySize, timeline.MaxBody)
	case r.Body == "":
		return nil, fmt.Errorf("json(%q): the response has no body", path)
	case !json.Valid([]byte(r.Body)):
		return nil, fmt.Errorf("json(%q): the body is not JSON", path)
	}
	return nil, nil
}

func (a *quantifiedAcc) result() CheckResult {
	res, c := a.res, a.c
	if res.Samples == 0 {
		res.Outcome = Inconclusive
		res.Measured = "no requests"
		res.Reason = "no requests in the window"
		return res
	}
	if c.readsSinceFault && a.faulted == 0 {
		res.Outcome = Inconclusive
		res.Measured = "no fault on"
		res.Reason = fmt.Sprintf("no request of the window's %d was sent with a fault on: since_fault has no fault to measure from", res.Samples)
		return res
	}
	share := 100 * float64(res.Matched) / float64(res.Samples)
	res.Measured = fmt.Sprintf("%s (%d/%d)", formatPct(share), res.Matched, res.Samples)
	res.measured(share, c.op, c.percent, UnitPercent)
	res.Outcome = outcome(compare(share, c.op, c.percent))
	if a.unknown == 0 {
		return res
	}
	// The requests with no baseline could each go either way: the
	// share lies between counting none of them and counting all.
	hi := 100 * float64(res.Matched+a.unknown) / float64(res.Samples)
	res.Measured = fmt.Sprintf("%s..%s (%d..%d/%d)", formatPct(share), formatPct(hi), res.Matched, res.Matched+a.unknown, res.Samples)
	if outcome(compare(hi, c.op, c.percent)) != res.Outcome {
		res.Outcome = Inconclusive
		res.Value, res.Margin = nil, 0
		res.Reason = fmt.Sprintf("%d of %d requests have nothing to compare with, so the share is between %s and %s (%s)", a.unknown, res.Samples, formatPct(share), formatPct(hi), a.why)
	}
	return res
}

func outcome(ok bool) Outcome {
	if ok {
		return Pass
	}
	return Fail
}

func formatPct(p float64) string {
	return strconv.FormatFloat(math.Round(p*100)/100, 'f', -1, 64) + "%"
}
