package contract

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// Class is what became of one request; the words are the timeline's (see
// timeline.Class), so the runner's progress line speaks them too.
type Class = timeline.Class

// The classes a request falls into.
const (
	Primary  = timeline.Primary
	Fallback = timeline.Fallback
	Rejected = timeline.Rejected
	Error    = timeline.Error
	Timeout  = timeline.Timeout
)

// Classes lists every class in the order reports show them.
var Classes = timeline.Classes

// Defaults of a Classification.
const (
	// defaultRejectWithin bounds the latency of a fast refusal.
	defaultRejectWithin = 50 * time.Millisecond
	// NoSource is the source name a service gives when nothing served.
	NoSource = "none"
)

// defaultPrimary are the source names that mean the primary path served:
// "primary", the word breakerimpl gives a Result its primary served
// (breakerimpl.SourcePrimary), for a service that passes it through
// unchanged; and the demo's names for its database and upstream service.
var defaultPrimary = []string{"primary", "db", "upstream"}

// defaultRejectStatus are the statuses of a fast refusal: too many
// requests, service unavailable.
var defaultRejectStatus = []StatusRange{{429, 429}, {503, 503}}

// StatusRange is an inclusive range of HTTP status codes; 503 is {503, 503}
// and 5xx is {500, 599}.
type StatusRange struct{ Lo, Hi int }

// ParseStatus parses "503" or "5xx".
func ParseStatus(s string) (StatusRange, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if len(s) == 3 && s[1:] == "xx" && s[0] >= '1' && s[0] <= '5' {
		lo := int(s[0]-'0') * 100
		return StatusRange{lo, lo + 99}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 {
		return StatusRange{}, fmt.Errorf("status %q is neither a code (503) nor a class (5xx)", s)
	}
	return StatusRange{n, n}, nil
}

// Has reports whether code is in the range.
func (s StatusRange) Has(code int) bool { return code >= s.Lo && code <= s.Hi }

func (s StatusRange) String() string {
	if s.Lo == s.Hi {
		return strconv.Itoa(s.Lo)
	}
	if s.Lo%100 == 0 && s.Hi == s.Lo+99 {
		return strconv.Itoa(s.Lo/100) + "xx"
	}
	return fmt.Sprintf("%d-%d", s.Lo, s.Hi)
}

func anyStatus(rs []StatusRange, code int) bool {
	for _, r := range rs {
		if r.Has(code) {
			return true
		}
	}
	return false
}

// Classification says how to sort requests into classes. The zero value
// knows no service's conventions (a target profile or the scenario's
// classify: section names them):
//
//   - no response: timeout when the error says the deadline passed, else
//     error; a 504 is a timeout too;
//   - 429 or 503 within 50ms: rejected (a fast refusal);
//   - any other 5xx: error;
//   - otherwise by the source the service states in SourceHeader (or
//     SourceJSON): none or absent is primary for a 2xx-4xx answer,
//     primary, db and upstream are primary, any other name is a fallback
//     by that name.
//
// Rules are tried first, in order; the first that matches decides.
type Classification struct {
	// SourceHeader is the response header naming the source that served;
	// none when empty. SourceJSON, when set, names a path in a
	// JSON body to read it from instead (e.g. "meta.source").
	SourceHeader string
	SourceJSON   string
	// Primary are the source names of the primary path; default
	// defaultPrimary.
	Primary []string
	// RejectStatus are the statuses of a refusal, default 429 and 503;
	// RejectWithin the latency under which one counts as fast, default 50ms.
	RejectStatus []StatusRange
	RejectWithin time.Duration
	// AgeHeader is the response header giving the age of a served copy in
	// milliseconds; none when empty.
	AgeHeader string
	// BreakerHeader is the response header a service states its breaker's
	// state in, read when the run sampled no breaker states; none when
	// empty.
	BreakerHeader string
	// Rules classify requests the defaults get wrong.
	Rules []Rule
}

// Rule classifies the requests that match all of its conditions. A rule
// with no condition matches every request.
type Rule struct {
	Class Class
	// Source names the fallback (or primary) that served; empty takes the
	// stated source.
	Source string
	// Status, when set, must hold the response status.
	Status []StatusRange
	// Header maps header names to the value they must have; "*" means the
	// header must be present with any value.
	Header map[string]string
	// JSON maps paths in the JSON body to the value they must have, written
	// as in JSON without quotes for strings: "true", "3", "cache".
	JSON map[string]string
	// MaxLatency, when set, is the most the response may have taken.
	MaxLatency time.Duration
}

func (c *Classification) sourceOf(r *timeline.Request) string {
	if c.SourceJSON != "" {
		if v, ok := JSONPath(r.Body, c.SourceJSON); ok {
			return jsonText(v)
		}
		return ""
	}
	if c.SourceHeader == "" {
		return ""
	}
	return r.Headers[canonical(c.SourceHeader)]
}

// Classify returns the class of r and the source that served it.
func (c *Classification) Classify(r *timeline.Request) (Class, string) {
	src := c.sourceOf(r)
	for i := range c.Rules {
		rule := &c.Rules[i]
		if rule.matches(r) {
			if rule.Source != "" {
				src = rule.Source
			}
			return rule.Class, src
		}
	}
	within := c.RejectWithin
	if within <= 0 {
		within = defaultRejectWithin
	}
	rejects := c.RejectStatus
	if len(rejects) == 0 {
		rejects = defaultRejectStatus
	}
	primary := c.Primary
	if len(primary) == 0 {
		primary = defaultPrimary
	}
	switch {
	case r.Status == 0 && isTimeout(r.Error), r.Status == 504:
		return Timeout, src
	case r.Status == 0:
		return Error, src
	case anyStatus(rejects, r.Status) && r.Latency <= within:
		return Rejected, src
	case r.Status >= 500 || r.Status == 429:
		return Error, src
	case src == "" || src == NoSource || slices.Contains(primary, src):
		return Primary, src
	}
	return Fallback, src
}

func isTimeout(err string) bool {
	e := strings.ToLower(err)
	return strings.Contains(e, "timeout") || strings.Contains(e, "deadline exceeded")
}

func (rule *Rule) matches(r *timeline.Request) bool {
	if len(rule.Status) > 0 && !anyStatus(rule.Status, r.Status) {
		return false
	}
	if rule.MaxLatency > 0 && r.Latency > rule.MaxLatency {
		return false
	}
	for name, want := range rule.Header {
		got, ok := r.Headers[canonical(name)]
		if !ok || (want != "*" && got != want) {
			return false
		}
	}
	for path, want := range rule.JSON {
		v, ok := JSONPath(r.Body, path)
		if !ok || jsonText(v) != want {
			return false
		}
	}
	return true
}

// JSONPath returns the value at a dotted path ("a.b", "items.0.id") in a
// JSON document.
func JSONPath(body, path string) (any, bool) {
	if body == "" {
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, false
	}
	return walkJSON(v, path)
}

func walkJSON(v any, path string) (any, bool) {
	if path == "" || path == "." {
		return v, true
	}
	for _, key := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[key]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// jsonText renders a decoded JSON value the way a rule writes it: strings
// bare, everything else as JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Age returns the age of the copy r served, from the age header, and
// whether r states one. A header that is there but is not a finite,
// non-negative number of milliseconds is an *AgeError: the service says it
// served a copy and nothing true about how old it is, so no bound on its
// age can be shown to hold (docs/contracts.md, "Ages a service gets wrong").
func (c *Classification) Age(r *timeline.Request) (time.Duration, bool, error) {
	if c.AgeHeader == "" {
		return 0, false, nil
	}
	h := canonical(c.AgeHeader)
	v, present := r.Headers[h]
	if !present {
		return 0, false, nil
	}
	ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
		return 0, false, &AgeError{Header: h, Value: v}
	}
	if ms >= float64(math.MaxInt64/time.Millisecond) {
		return time.Duration(math.MaxInt64), true, nil
	}
	return time.Duration(ms * float64(time.Millisecond)), true, nil
}

// AgeError is an age header whose value is not a non-negative number of
// milliseconds: "-5", "soon", "NaN".
type AgeError struct {
	Header string
	Value  string
}

func (e *AgeError) Error() string {
	v := e.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return fmt.Sprintf("age header %s: %q is not a non-negative number of milliseconds", e.Header, v)
}

// ageTally counts a route's responses and those with a bad age, with the
// first of them.
type ageTally struct {
	n, bad     int
	firstSeq   uint64
	firstPhase string
	err        error
}

// ageTallies tallies bad ages per route, in the order routes first showed.
type ageTallies struct {
	byRoute map[string]*ageTally
	routes  []string
}

func (a *ageTallies) add(r *timeline.Request, route string, cls *Classification) {
	t := a.byRoute[route]
	if t == nil {
		t = &ageTally{}
		a.byRoute[route] = t
		a.routes = append(a.routes, route)
	}
	t.n++
	if _, _, err := cls.Age(r); err != nil {
		if t.bad == 0 {
			t.firstSeq, t.firstPhase, t.err = r.Seq, r.Phase, err
		}
		t.bad++
	}
}

func (a *ageTallies) findings() []Finding {
	var out []Finding
	for _, k := range a.routes {
		t := a.byRoute[k]
		if t.bad == 0 {
			continue
		}
		out = append(out, Finding{
			Kind: "bad_age", Phase: t.firstPhase, Route: k, Total: t.n, Share: 100 * float64(t.bad) / float64(t.n),
			Message: fmt.Sprintf("%s: %d of %d responses state an age that is not one (first: %v, request %d in %s); how old those copies were is unknown, and every expectation that reads age counts them as violations: fix the header the service sends, or name the right one in classify.age_header",
				k, t.bad, t.n, t.err, t.firstSeq, phaseName(t.firstPhase)),
		})
	}
	return out
}
