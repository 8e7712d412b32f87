package contract

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The fixed forms of an expectation, besides the quantified predicate. Each
// is `MEASURE OP VALUE`, in the style of k6 thresholds, or a sentence about
// a breaker.
const (
	opPat   = `(<=|>=|==|!=|<|>)`
	numPat  = `([0-9]+(?:\.[0-9]+)?)`
	durPat  = `([0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))`
	pctPat  = numPat + `\s*%`
	argsPat = `(?:\(\s*("[^"]*"(?:\s*,\s*"[^"]*")*)?\s*\))?`
)

var (
	latencyForm = regexp.MustCompile(`^(?:p\(\s*` + numPat + `\s*\)|p([0-9]+)|(avg|mean|med|min|max))(?:\s+latency)?\s*` + opPat + `\s*(.+)$`)
	rateForm    = regexp.MustCompile(`^((?:admitted\s+)?(?:rps|count))\s*` + opPat + `\s*(.+)$`)
	classForm   = regexp.MustCompile(`^(primary|fallback|rejected|error|timeout)` + argsPat + `\s*` + opPat + `\s*(.+)$`)
	statusForm  = regexp.MustCompile(`^status\s+([0-9]{3}|[1-5]xx)\s*` + opPat + `\s*(.+)$`)
	staleForm   = regexp.MustCompile(`^stale\s*` + opPat + `\s*(\S+)$`)
	timeForm    = regexp.MustCompile(`^(time_to_degrade|time_to_recover)` + argsPat + `\s*` + opPat + `\s*(\S+)$`)
	breakerForm = regexp.MustCompile(`^breaker\(\s*"([^"]+)"\s*\)\s+(opens|closes)\s+within\s+(\S+)(\s+after\s+fault)?$`)
	writesForm  = regexp.MustCompile(`^lost_writes\s*` + opPat + `\s*(\S+)$`)
	verifyForm  = regexp.MustCompile(`^violated_verifications\s*` + opPat + `\s*(\S+)$`)

	durValue = regexp.MustCompile(`^` + durPat + `$`)
	pctValue = regexp.MustCompile(`^` + pctPat + `$`)
	numValue = regexp.MustCompile(`^` + numPat + `$`)
)

// formsHint lists the forms, for an expectation that matches none.
const formsHint = `write PREDICATE for >= 99%, or one of: p99 latency < 150ms, p99 latency <= 1.5 * baseline("warmup"), rps >= 100, count >= 50, admitted rps <= 55, fallback >= 99%, status 5xx <= 1%, stale <= 30s, time_to_degrade < 1s, time_to_recover < 6s, breaker("db") opens within 1s, breaker("db") never opens, process("target") stops within 2s, process("target") drains, increase("db.calls") <= 1.1 * count, increase(db_queries_total{kind="product"}) <= 0.05 * count, increase(probe("calls")) <= 1.2 * count, max(x_state{state="open"}) == 1, histogram_quantile(0.99, x_seconds) < 250ms, max(promql(` + "`sum(rate(errors_total[30s]))`" + `)) <= 0.5, status_shift("4xx") <= 10%, lost_writes == 0, violated_verifications == 0, probe("clicks") >= acked within 5s`

// compileForm parses an expectation that is not a quantified predicate.
func compileForm(src string) (check, error) {
	s := strings.Join(strings.Fields(src), " ")
	switch {
	case latencyForm.MatchString(s):
		m := latencyForm.FindStringSubmatch(s)
		c := &latencyCheck{src: src, op: m[4]}
		switch {
		case m[1] != "":
			c.pct, _ = strconv.ParseFloat(m[1], 64)
		case m[2] != "":
			c.pct = percentileOf(m[2])
		default:
			c.stat = m[3]
		}
		if c.stat == "" && (c.pct <= 0 || c.pct > 100) {
			return nil, &SyntaxError{Column: 1, Msg: fmt.Sprintf("percentile %q is not between 0 and 100", firstWord(s)), Hint: "write p50, p90, p99, p999 or p(99.9)"}
		}
		if usesBaseline(m[5]) {
			return newBaselined(src, m[4], m[5], unitDur, c, true)
		}
		d, err := durationArg(src, m[5])
		c.want, c.wantText = d, m[5]
		return c, err
	case rateForm.MatchString(s):
		m := rateForm.FindStringSubmatch(s)
		admitted := strings.HasPrefix(m[1], "admitted")
		if admitted {
			m[1] = strings.Join(strings.Fields(m[1]), " ")
		}
		if admitted && usesBaseline(m[3]) {
			return nil, &SyntaxError{Column: 1, Msg: m[1] + " is compared with a number: the configured limit", Hint: "write the limiter's rate with a margin, e.g. admitted rps <= 55 for 50/s"}
		}
		if usesBaseline(m[3]) {
			return newBaselined(src, m[2], m[3], unitNum, &rateCheck{src: src, what: m[1], op: m[2]}, true)
		}
		n, err := numberArg(src, m[3])
		return &rateCheck{src: src, what: m[1], op: m[2], want: n, wantText: m[3]}, err
	case classForm.MatchString(s):
		m := classForm.FindStringSubmatch(s)
		names := argNames(m[2])
		if len(names) > 1 {
			return nil, &SyntaxError{Column: 1, Msg: fmt.Sprintf("%s(...) takes one source name", m[1]), Hint: `write fallback("cache") >= 90%`}
		}
		c := &shareCheck{src: src, class: Class(m[1]), op: m[3], wantText: m[4]}
		if len(names) == 1 {
			c.source = names[0]
		}
		if usesBaseline(m[4]) {
			return newBaselined(src, m[3], m[4], unitPct, c, true)
		}
		var err error
		c.want, err = pctArg(src, m[4])
		return c, err
	case statusForm.MatchString(s):
		m := statusForm.FindStringSubmatch(s)
		rng, _ := ParseStatus(m[1])
		c := &shareCheck{src: src, status: &rng, op: m[2], wantText: m[3]}
		if usesBaseline(m[3]) {
			return newBaselined(src, m[2], m[3], unitPct, c, true)
		}
		var err error
		c.want, err = pctArg(src, m[3])
		return c, err
	case staleForm.MatchString(s):
		m := staleForm.FindStringSubmatch(s)
		if m[1] != "<" && m[1] != "<=" {
			return nil, &SyntaxError{Column: strings.Index(src, m[1]) + 1, Msg: "stale takes an upper bound", Hint: "write stale <= 30s"}
		}
		d, err := durationArg(src, m[2])
		return &staleCheck{src: src, op: m[1], want: d, wantText: m[2]}, err
	case timeForm.MatchString(s):
		m := timeForm.FindStringSubmatch(s)
		c := &timeCheck{src: src, recover: m[1] == "time_to_recover", op: m[3], wantText: m[4]}
		for _, n := range argNames(m[2]) {
			if !Class(n).Valid() {
				return nil, &SyntaxError{Column: strings.Index(src, n) + 1, Msg: fmt.Sprintf("unknown class %q", n), Hint: "classes are primary, fallback, rejected, error, timeout"}
			}
			c.classes = append(c.classes, Class(n))
		}
		if c.op != "<" && c.op != "<=" {
			return nil, &SyntaxError{Column: strings.Index(src, c.op) + 1, Msg: m[1] + " takes an upper bound", Hint: "write " + m[1] + " < 1s"}
		}
		var err error
		c.want, err = durationArg(src, m[4])
		return c, err
	case breakerForm.MatchString(s):
		m := breakerForm.FindStringSubmatch(s)
		d, err := durationArg(src, m[3])
		return &breakerCheck{src: src, name: m[1], opens: m[2] == "opens", want: d, wantText: m[3]}, err
	case increaseForm.MatchString(s):
		return compileIncrease(src, increaseForm.FindStringSubmatch(s))
	case stopForm.MatchString(s):
		return compileStop(src, stopForm.FindStringSubmatch(s))
	case neverForm.MatchString(s):
		return &neverOpensCheck{src: src, name: neverForm.FindStringSubmatch(s)[1]}, nil
	case shiftForm.MatchString(s):
		return compileShift(src, shiftForm.FindStringSubmatch(s))
	case strings.Contains(s, "promql("):
		return compilePromQL(src, s)
	case isMetricForm(s):
		return compileMetricForm(src, s, "")
	case probeIncreaseForm.MatchString(s):
		return compileProbeIncrease(src, probeIncreaseForm.FindStringSubmatch(s))
	case probeForm.MatchString(s):
		return compileProbe(src, probeForm.FindStringSubmatch(s))
	case writesForm.MatchString(s):
		m := writesForm.FindStringSubmatch(s)
		n, err := numberArg(src, m[2])
		return &writesCheck{src: src, op: m[1], want: n, wantText: m[2]}, err
	case verifyForm.MatchString(s):
		m := verifyForm.FindStringSubmatch(s)
		n, err := numberArg(src, m[2])
		return &verifyCheck{src: src, op: m[1], want: n, wantText: m[2]}, err
	}
	return nil, &SyntaxError{Column: 1, Msg: fmt.Sprintf("expectation %q has no quantifier and is no known form", src), Hint: formsHint}
}

// percentileOf reads the digits of pNN: p50 is 50, p999 is 99.9, p9999 99.99.
func percentileOf(digits string) float64 {
	if len(digits) > 2 {
		digits = digits[:2] + "." + digits[2:]
	}
	p, _ := strconv.ParseFloat(digits, 64)
	return p
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

func argNames(list string) []string {
	var out []string
	for _, part := range strings.Split(list, ",") {
		if part = strings.Trim(strings.TrimSpace(part), `"`); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func valueError(src, v, msg, hint string) error {
	col := strings.LastIndex(src, v) + 1
	if col < 1 {
		col = 1
	}
	return &SyntaxError{Column: col, Msg: msg, Hint: hint}
}

func durationArg(src, v string) (time.Duration, error) {
	if !durValue.MatchString(v) {
		hint := "write a duration such as 150ms or 1s"
		if numValue.MatchString(v) {
			hint = fmt.Sprintf("add a unit: %sms or %ss", v, v)
		}
		return 0, valueError(src, v, fmt.Sprintf("%q is not a duration", v), hint)
	}
	return time.ParseDuration(strings.Replace(v, "µs", "us", 1))
}

func pctArg(src, v string) (float64, error) {
	m := pctValue.FindStringSubmatch(v)
	if m == nil {
		return 0, valueError(src, v, fmt.Sprintf("%q is not a share", v), "write a share in percent, such as 99%")
	}
	p, _ := strconv.ParseFloat(m[1], 64)
	if p > 100 {
		return 0, valueError(src, v, fmt.Sprintf("share %s is above 100%%", v), "")
	}
	return p, nil
}

func numberArg(src, v string) (float64, error) {
	if !numValue.MatchString(v) {
		return 0, valueError(src, v, fmt.Sprintf("%q is not a number", v), "write a plain number such as 100")
	}
	return strconv.ParseFloat(v, 64)
}

// fmtDur renders a measured duration readably: 132.4ms, 1.25s.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
