// Package inject turns faults described in user terms (timeout, error,
// latency, panic, status) into pingcap/failpoint terms, switches them on and
// off in a running service, finds the failpoints a service really has, and
// gives marker bodies the helpers that carry a fault out and count its hits.
package inject

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/failpoint"

	"github.com/chaoskit/chaoskit/inject/dist"
)

// Action is what a fault does when its marker fires.
type Action string

// The actions a scenario can name.
const (
	// Timeout blocks the marked call until its context's deadline and then
	// returns the context's error.
	Timeout Action = "timeout"
	// Error returns an error with the fault's value as its message.
	Error Action = "error"
	// Latency delays the marked call by the fault's value, then lets it go
	// on normally: a duration (200ms), or a delay distribution in package
	// dist's text form (lognormal/20ms/200ms), drawn anew for each call.
	Latency Action = "latency"
	// Panic panics with the fault's value as its message.
	Panic Action = "panic"
	// Status makes the marked call answer with the HTTP status in the value.
	Status Action = "status"
	// GRPC makes the marked call fail with the gRPC status in the value: a
	// code by name (UNAVAILABLE) or number (14), optionally followed by a
	// colon and a message ("UNAVAILABLE: recommendations down").
	GRPC Action = "grpc"
	// Term sets the fault's value verbatim as a failpoint term.
	Term Action = "term"
)

// Actions lists every action, in the order documentation shows them.
var Actions = []Action{Timeout, Error, Latency, Panic, Status, GRPC, Term}

// Fault is one fault to switch on at a failpoint, in user terms.
type Fault struct {
	Action Action
	// Value is the action's argument: the message for error and panic, the
	// duration or distribution for latency, the status code for status, the raw term for term.
	Value string
	// Probability in (0,1] makes the marker fire only for that share of its
	// evaluations; 0 means always.
	Probability float64
	// Count > 0 makes the marker fire at most that many times.
	Count int
	// Match restricts the fault to the requests that carry each header
	// (or W3C baggage entry) named with its value, such as
	// {"X-Tenant": "b"}; Fire sees the request in its context (see
	// Middleware). Nil is every call. It takes no Count: the marker
	// counts every evaluation, matched or not.
	Match map[string]string
}

// The values marker bodies receive. Keeping them in one string makes every
// action reachable through failpoint's return("...") term, so a marker body
// always runs with a value it can read (a sleep term runs the body with nil).
const (
	valueTimeout = "timeout"
	prefixError  = "error:"
	prefixDelay  = "latency:"
	prefixPanic  = "panic:"
	prefixStatus = "status:"
	prefixGRPC   = "grpc:"
	// pointSep separates the failpoint path from the action in a value.
	pointSep = "|"
)

// DefaultErrorMessage is the error text of an error fault without a value.
const DefaultErrorMessage = "injected error"

// Term returns the failpoint term that carries the fault out at the
// failpoint with the full path point, e.g.
// `25%3*return("example.com/svc/store/query|error:db down")`. The value
// names the point so that Fire can count hits per failpoint.
func (f Fault) Term(point string) (string, error) {
	var body string
	switch f.Action {
	case Timeout:
		if f.Value != "" {
			return "", fmt.Errorf("action timeout takes no value (it waits for the caller's deadline); remove %q", f.Value)
		}
		body = valueTimeout
	case Error:
		msg := f.Value
		if msg == "" {
			msg = DefaultErrorMessage
		}
		body = prefixError + msg
	case Latency:
		if f.Value == "" {
			return "", fmt.Errorf("action latency needs a value, a duration such as 200ms")
		}
		d, err := dist.Parse(f.Value)
		if err != nil {
			if _, derr := time.ParseDuration(f.Value); derr == nil || !strings.Contains(f.Value, "/") {
				return "", fmt.Errorf("latency value %q is not a positive duration such as 200ms, nor a distribution such as lognormal/20ms/200ms", f.Value)
			}
			return "", fmt.Errorf("latency value: %v", err)
		}
		body = prefixDelay + d.String()
	case Panic:
		msg := f.Value
		if msg == "" {
			msg = "injected panic"
		}
		body = prefixPanic + msg
	case Status:
		code, err := strconv.Atoi(f.Value)
		if err != nil || code < 100 || code > 599 {
			return "", fmt.Errorf("status value %q is not an HTTP status code (100-599)", f.Value)
		}
		body = prefixStatus + strconv.Itoa(code)
	case GRPC:
		code, msg, err := ParseGRPCStatus(f.Value)
		if err != nil {
			return "", err
		}
		body = prefixGRPC + strconv.FormatUint(uint64(code), 10) + ":" + msg
	case Term:
		if strings.TrimSpace(f.Value) == "" {
			return "", fmt.Errorf("action term needs a value, a failpoint term such as 50%%return(true)")
		}
		if f.Probability != 0 || f.Count != 0 {
			return "", fmt.Errorf("action term takes its probability and count inside the term; remove probability/count")
		}
		return f.Value, nil
	default:
		return "", fmt.Errorf("unknown action %q", f.Action)
	}
	var b strings.Builder
	if f.Probability != 0 {
		if f.Probability < 0 || f.Probability > 1 || math.IsNaN(f.Probability) {
			return "", fmt.Errorf("probability %v is outside 0..1", f.Probability)
		}
		if f.Probability < 1 {
			b.WriteString(strconv.FormatFloat(f.Probability*100, 'f', -1, 64))
			b.WriteString("%")
		}
	}
	if f.Count < 0 {
		return "", fmt.Errorf("count %d is negative", f.Count)
	}
	if f.Count > 0 {
		b.WriteString(strconv.Itoa(f.Count))
		b.WriteString("*")
	}
	if len(f.Match) > 0 {
		if f.Count != 0 {
			return "", fmt.Errorf("a fault with a match takes no count: the marker would count the calls of every request, matched or not")
		}
		for name := range f.Match {
			if name == "" {
				return "", fmt.Errorf("a match needs header names")
			}
		}
		body = prefixWhen + encodeMatch(f.Match) + pointSep + body
	}
	if point != "" {
		body = point + pointSep + body
	}
	// pingcap/failpoint measures a quoted value as its text plus the two
	// quotes, so a value that needs escaping would be misread.
	if strconv.Quote(body) != `"`+body+`"` {
		return "", fmt.Errorf("value %q holds a quote, a backslash or a control character, which a failpoint term cannot carry", f.Value)
	}
	b.WriteString("return(")
	b.WriteString(strconv.Quote(body))
	b.WriteString(")")
	return b.String(), nil
}

// CheckTerm parses a raw failpoint term with pingcap/failpoint's own parser,
// in a registry of its own, so a bad term is refused before a run rather
// than by the control endpoint in the middle of one.
//
// The parser panics on some malformed terms, such as return(0 without its
// closing parenthesis; those are refused like any other.
func CheckTerm(term string) (err error) {
	bad := fmt.Errorf("failpoint term %q does not parse; the grammar is [p%%][n*]action[(value)][->term...], actions off return sleep panic pause print", term)
	defer func() {
		if recover() != nil {
			err = bad
		}
	}()
	var fps failpoint.Failpoints
	if err := fps.Enable("chaoskit/check", term); err != nil {
		return bad
	}
	return nil
}
