package plan

import (
	"errors"
	"fmt"
	"net/textproto"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/internal/suggest"
	"github.com/chaoskit/chaoskit/timeline"
)

// Contract states what must hold in a window of the run. See
// docs/contracts.md for every form.
type Contract struct {
	Name string `yaml:"name"`
	// Phase is the window; empty means the whole run. Settle skips its
	// first part; Until ends the window that long after the phase starts;
	// Last keeps only its last part.
	Phase  string   `yaml:"phase"`
	Settle Duration `yaml:"settle"`
	Until  Duration `yaml:"until"`
	Last   Duration `yaml:"last"`
	// Requests restricts the window to some requests.
	Requests RequestFilter `yaml:"requests"`
	// Expect holds the assertions, e.g. `status == 200 for >= 99%`.
	Expect []string `yaml:"expect"`
	// MinSamples is the fewest requests a verdict may rest on; default 50.
	MinSamples int `yaml:"min_samples"`
	// Position is where the contract is written (its first key), set by
	// the loader: the scenario file, or the included file it came from.
	// Reports and CI annotations point there.
	Position contract.Position `yaml:"-"`

	// classify is the scenario's classification and compiled the
	// contract compiled with it, both set by validation: a contract is
	// compiled once, when its scenario loads.
	classify contract.Classification
	compiled *contract.Contract
}

// Compiled returns the contract as validation compiled it; nil for a
// contract that did not come through loading (its scenario was refused).
func (c *Contract) Compiled() *contract.Contract { return c.compiled }

// RequestFilter selects requests by method, path glob (* within one
// segment), tag and template name; empty fields match everything.
type RequestFilter struct {
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
	Tag    string `yaml:"tag"`
	// Template is the name of a request template (load.requests[].name).
	Template string `yaml:"template"`
}

func (f RequestFilter) filter() contract.Filter {
	return contract.Filter{Method: f.Method, Path: f.Path, Tag: f.Tag, Template: f.Template}
}

// Classify says how to sort this service's requests into primary,
// fallback, rejected, error and timeout. Every field is optional; the
// target profile's conventions (Profile) fill the headers left out.
type Classify struct {
	// SourceHeader names the response header stating the source that
	// served; SourceJSON a path in a JSON body to read it from instead.
	SourceHeader string `yaml:"source_header"`
	SourceJSON   string `yaml:"source_json"`
	// AgeHeader states the age of a served copy in milliseconds.
	AgeHeader string `yaml:"age_header"`
	// BreakerHeader states the service's breaker state, read by
	// breaker(...) predicates when the run sampled no states.
	BreakerHeader string `yaml:"breaker_header"`
	// Primary are the source names of the primary path (default primary, db,
	// upstream).
	Primary []string `yaml:"primary"`
	// Rejected says what a fast refusal looks like (default 429 and 503
	// within 50ms).
	Rejected *RejectSpec `yaml:"rejected"`
	// Rules are tried first, in order; the first that matches decides.
	Rules []ClassRule `yaml:"rules"`
}

// RejectSpec is what a fast refusal looks like.
type RejectSpec struct {
	Status []Status `yaml:"status"`
	Within Duration `yaml:"within"`
}

// ClassRule gives the class (and source) of requests matching all of its
// conditions.
type ClassRule struct {
	Class  string `yaml:"class"`
	Source string `yaml:"source"`
	// Status lists codes (503) or classes (5xx).
	Status []Status `yaml:"status"`
	// Header maps names to the value they must have ("*": any value).
	Header map[string]string `yaml:"header"`
	// JSON maps paths in a JSON body to the value they must have.
	JSON       map[string]Scalar `yaml:"json"`
	MaxLatency Duration          `yaml:"max_latency"`
}

// Write says which requests are writes and how to read each acknowledged
// one back after the run.
type Write struct {
	Requests RequestFilter `yaml:"requests"`
	// Ack lists the statuses that acknowledge a write; default 2xx.
	Ack []Status `yaml:"ack"`
	// Read is the read-back request, a method and a path with
	// placeholders filled from the acknowledgement: {json.id} (a path in
	// its JSON body) or {header.Location} (a kept header).
	Read string `yaml:"read"`
	// Compare names the JSON fields that must read back as acknowledged;
	// default every field of the acknowledgement.
	Compare []string `yaml:"compare"`
	// ReadHeaders are sent with every read-back (an API behind auth needs
	// Authorization). A value may hold {env.NAME}, read from chaoskit's
	// environment when the read-back runs and never recorded, and
	// {json.PATH} or {header.NAME} of the acknowledgement, as Read does.
	ReadHeaders map[string]string `yaml:"read_headers"`
	// ReadWithin bounds the read-back: a read that gets no answer, or
	// 408, 425, 429 or a 5xx, is tried again with backoff until this long
	// after the last phase ended; default defaultReadWithin.
	ReadWithin Duration `yaml:"read_within"`
	// Missing lists the statuses with which a read says the write is not
	// there, so that it is lost; default 404 and 410. Any other answer but
	// a 2xx leaves the write unknown.
	Missing []Status `yaml:"missing"`
}

// Status is an HTTP status code (503) or class (5xx).
type Status string

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (s *Status) UnmarshalYAML(n ast.Node) error {
	v, ok := scalar(n)
	if !ok {
		return errAt(n, "write a code such as 503 or a class such as 5xx", "a status must be a plain value")
	}
	if _, err := contract.ParseStatus(v); err != nil {
		return errAt(n, "write a code such as 503 or a class such as 5xx", "%v", err)
	}
	*s = Status(v)
	return nil
}

func statusRanges(ss []Status) []contract.StatusRange {
	var out []contract.StatusRange
	for _, s := range ss {
		r, _ := contract.ParseStatus(string(s))
		out = append(out, r)
	}
	return out
}

// Scalar is any plain YAML value, kept as its text: true, 3, cache.
type Scalar string

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (s *Scalar) UnmarshalYAML(n ast.Node) error {
	switch v := n.(type) {
	case *ast.BoolNode, *ast.NullNode:
		*s = Scalar(v.GetToken().Value)
		return nil
	}
	v, ok := scalar(n)
	if !ok {
		return errAt(n, "write a plain value such as true, 3 or cache", "a json condition must be a plain value")
	}
	*s = Scalar(v)
	return nil
}

// Classification returns the scenario's classification as the contract
// package takes it: its classify: section, with the headers it leaves out
// taken from its target profile's conventions. The runner's progress lines
// and run.json, the contracts, every report, fuzz and explore all classify
// requests with it.
func (sc *Scenario) Classification() contract.Classification {
	out := sc.classification()
	sc.conventions.fill(&out)
	return out
}

// Classifier returns the class of a request under the scenario's
// classification.
func (sc *Scenario) Classifier() func(*timeline.Request) timeline.Class {
	c := sc.Classification()
	return func(r *timeline.Request) timeline.Class {
		class, _ := c.Classify(r)
		return class
	}
}

// RecordedHeaders returns the response headers a run of sc must record,
// besides those every run keeps (Retry-After, Content-Type): the headers
// its classification reads (its target profile's conventions included),
// those its predicates name with header("…") and those its write
// read-backs take ({header.Location}). all is true when a predicate
// computes a header's name, so that only recording every header serves
// it. A header the run does not record cannot be judged, so a rule on it
// would silently never match.
func (sc *Scenario) RecordedHeaders() (names []string, all bool) {
	cls := sc.Classification()
	names = cls.Headers()
	for i := range sc.Contracts {
		cc := sc.Contracts[i].compiled
		if cc == nil {
			continue // validation refused it already
		}
		hs, any := cc.Headers()
		names = append(names, hs...)
		all = all || any
	}
	for i := range sc.Writes {
		names = append(names, sc.Writes[i].Headers()...)
	}
	slices.Sort(names)
	return slices.Compact(names), all
}

func (sc *Scenario) classification() contract.Classification {
	c := sc.Classify
	if c == nil {
		return contract.Classification{}
	}
	out := contract.Classification{SourceHeader: c.SourceHeader, SourceJSON: c.SourceJSON, AgeHeader: c.AgeHeader, BreakerHeader: c.BreakerHeader, Primary: c.Primary}
	if c.Rejected != nil {
		out.RejectStatus, out.RejectWithin = statusRanges(c.Rejected.Status), c.Rejected.Within.D()
	}
	for _, r := range c.Rules {
		rule := contract.Rule{Class: contract.Class(r.Class), Source: r.Source, Status: statusRanges(r.Status), Header: r.Header, MaxLatency: r.MaxLatency.D()}
		if len(r.JSON) > 0 {
			rule.JSON = map[string]string{}
			for k, v := range r.JSON {
				rule.JSON[k] = string(v)
			}
		}
		out.Rules = append(out.Rules, rule)
	}
	return out
}

// Spec returns the contract as the contract package takes it.
func (c Contract) Spec() contract.Spec {
	return contract.Spec{Name: c.Name, Phase: c.Phase, Settle: c.Settle.D(), Until: c.Until.D(), Last: c.Last.D(),
		Requests: c.Requests.filter(), Expect: c.Expect, MinSamples: c.MinSamples, Classify: c.classify}
}

// Acknowledged reports whether a request with this method, path, tags and
// response status is one of these writes, acknowledged.
func (w *Write) Acknowledged(method, urlPath string, tags []string, template string, status int) bool {
	if !w.Requests.filter().Match(method, urlPath, tags, template) {
		return false
	}
	if len(w.Ack) == 0 {
		return status/100 == 2
	}
	for _, r := range statusRanges(w.Ack) {
		if r.Has(status) {
			return true
		}
	}
	return false
}

// placeholder matches {json.PATH} and {header.NAME} in a read template.
var placeholder = regexp.MustCompile(`\{(json|header)\.([^{}]+)\}`)

// Headers names the acknowledgement headers the read template takes
// ({header.Location}), in canonical form: a run must record them.
func (w *Write) Headers() []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(w.Read, -1) {
		if m[1] == "header" {
			out = append(out, textproto.CanonicalMIMEHeaderKey(m[2]))
		}
	}
	return append(out, w.headerRefs()...)
}

// fillPlaceholder is the value of {json.PATH} or {header.NAME} in an
// acknowledgement, and whether it has one.
func fillPlaceholder(kind, name string, headers map[string]string, body string) (string, bool) {
	var v string
	if kind == "header" {
		v = headers[textproto.CanonicalMIMEHeaderKey(name)]
	} else if x, ok := contract.JSONPath(body, name); ok {
		switch x := x.(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'f', -1, 64)
		}
	}
	return v, v != ""
}

// ReadTarget fills the read template from an acknowledgement's kept
// headers and body, giving the method and path to read the write back.
func (w *Write) ReadTarget(headers map[string]string, body string) (method, urlPath string, err error) {
	return w.ReadTargetWith(headers, body, nil)
}

// ReadTargetWith is ReadTarget with the values setup steps captured, for
// the {capture.NAME} placeholders of the read template.
func (w *Write) ReadTargetWith(headers map[string]string, body string, caps Captures) (method, urlPath string, err error) {
	method, tmpl, _ := strings.Cut(strings.TrimSpace(caps.Fill(w.Read)), " ")
	urlPath = placeholder.ReplaceAllStringFunc(strings.TrimSpace(tmpl), func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		v, _ := fillPlaceholder(sub[1], sub[2], headers, body)
		if v == "" && err == nil {
			err = fmt.Errorf("the acknowledgement has no %s.%s", sub[1], sub[2])
		}
		return v
	})
	return strings.ToUpper(method), urlPath, err
}

func (v *validator) validateContract(i int, phases map[string]*Phase) {
	c := &v.sc.Contracts[i]
	at := fmt.Sprintf("$.contracts[%d]", i)
	if i == 0 {
		// Classification and writes matter only to contracts: check them
		// once, with the first.
		v.validateClassify()
		v.validateWrites()
	}
	if strings.TrimSpace(c.Name) == "" {
		v.errorf(at, "add name: what the contract promises", "contract %d has no name", i+1)
	}
	// The window's span: the phase, or the whole run.
	span, spanName := Duration(0), "the run"
	for _, p := range v.sc.Phases {
		span += p.Duration
	}
	if c.Phase != "" {
		p, ok := phases[c.Phase]
		if !ok {
			names := make([]string, 0, len(phases))
			for n := range phases {
				names = append(names, n)
			}
			sort.Strings(names)
			v.errorf(at+".phase", suggest.Hint(c.Phase, names), "contract %q names phase %q, which the scenario does not have", c.Name, c.Phase)
			span = 0
		} else {
			span, spanName = p.Duration, fmt.Sprintf("phase %q", p.Name)
		}
	}
	switch {
	case c.Last > 0 && (c.Settle > 0 || c.Until > 0):
		v.errorf(at+".last", "use last alone, or settle and until", "last cannot be combined with settle or until")
	case span == 0:
	case c.Settle >= span:
		v.errorf(at+".settle", "make settle shorter than the phase", "settle %v leaves nothing of %s (%v)", c.Settle.D(), spanName, span.D())
	case c.Until > 0 && c.Until <= c.Settle:
		v.errorf(at+".until", "until counts from the phase start, so it must be later than settle", "until %v leaves nothing after settle %v", c.Until.D(), c.Settle.D())
	case c.Until > span:
		v.errorf(at+".until", "make until at most the phase's duration", "until %v is past the end of %s (%v)", c.Until.D(), spanName, span.D())
	case c.Last >= span:
		v.errorf(at+".last", "make last shorter than the phase, or leave it out", "last %v covers all of %s (%v)", c.Last.D(), spanName, span.D())
	}
	v.validateFilter(at+".requests", c.Requests)
	if c.MinSamples < 0 {
		v.errorf(at+".min_samples", "", "min_samples %d is negative", c.MinSamples)
	}
	if len(c.Expect) == 0 {
		v.errorf(at, "add expect: [status == 200 for >= 99%]", "contract %q has no expectations", c.Name)
		return
	}
	for j, e := range c.Expect {
		if strings.Contains(e, "violated_verifications") && len(v.sc.Verify) == 0 {
			v.errorf(fmt.Sprintf("%s.expect[%d]", at, j), "add verify: [{name: ..., requests: {template: CHAIN/STEP}, request: GET /{capture.code}, expect: [404]}]", "violated_verifications needs the scenario to declare verify rules")
		}
		if strings.Contains(e, "lost_writes") && len(v.sc.Writes) == 0 {
			v.errorf(fmt.Sprintf("%s.expect[%d]", at, j), "add writes: to say which requests are writes and how to read them back", "lost_writes needs the scenario to declare its writes")
		}
	}
	c.classify = v.sc.Classification()
	var err error
	c.compiled, err = contract.Compile(c.Spec())
	var ee *contract.ExpectError
	if errors.As(err, &ee) {
		msg, hint := ee.Err.Error(), ""
		var se *contract.SyntaxError
		if errors.As(ee.Err, &se) {
			msg, hint = se.Msg, se.Hint
		}
		v.errorf(fmt.Sprintf("%s.expect[%d]", at, ee.Index), hint, "%s", msg)
		if se != nil && se.Column > 1 {
			last := v.errs[len(v.errs)-1]
			last.Col += se.Column - 1
		}
	} else if err != nil {
		v.errorf(at, "", "%v", err)
	}
	v.validatePhaseRefs(at, c, phases)
}

// validatePhaseRefs checks that every phase an expectation names (a
// baseline, status_shift's baseline phase) is one the scenario has.
func (v *validator) validatePhaseRefs(at string, c *Contract, phases map[string]*Phase) {
	names := make([]string, 0, len(phases))
	for n := range phases {
		names = append(names, n)
	}
	sort.Strings(names)
	for j, e := range c.Expect {
		for _, ref := range contract.PhaseRefs(e) {
			if _, ok := phases[ref.Name]; ok {
				continue
			}
			v.errorf(fmt.Sprintf("%s.expect[%d]", at, j), suggest.Hint(ref.Name, names), "%q names phase %q, which the scenario does not have", e, ref.Name)
			if ref.Column > 1 {
				v.errs[len(v.errs)-1].Col += ref.Column - 1
			}
		}
	}
}

func (v *validator) validateFilter(at string, f RequestFilter) {
	if f.Method != "" && !methods[strings.ToUpper(f.Method)] {
		v.errorf(at+".method", "use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS", "unknown method %q", f.Method)
	}
	if f.Path != "" {
		if _, err := path.Match(f.Path, ""); err != nil || !strings.HasPrefix(f.Path, "/") {
			v.errorf(at+".path", "write a path glob such as /products/*", "bad path glob %q", f.Path)
		}
	}
	if f.Template != "" {
		names := v.templateNames()
		if !slices.Contains(names, f.Template) {
			hint := "name the request template: load: {requests: [{name: " + f.Template + ", path: ...}]}"
			if len(names) > 0 {
				hint = suggest.Hint(f.Template, names)
			}
			v.errorf(at+".template", hint, "no request template is named %q", f.Template)
		}
	}
}

// templateNames are the names of the scenario's request templates, in its
// load and its phases' loads.
func (v *validator) templateNames() []string {
	var names []string
	add := func(l *Load) {
		for _, r := range l.Requests {
			if r.Chain != nil {
				for _, st := range r.Chain {
					if n := StepName(r.Name, st.Name); !slices.Contains(names, n) {
						names = append(names, n)
					}
				}
				continue
			}
			if r.Name != "" && !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	add(&v.sc.Load)
	for i := range v.sc.Phases {
		if l := v.sc.Phases[i].Load; l != nil {
			add(l)
		}
	}
	return names
}

var classNames = []string{"primary", "fallback", "rejected", "error", "timeout"}

func (v *validator) validateClassify() {
	c := v.sc.Classify
	if c == nil {
		return
	}
	if c.SourceHeader != "" && c.SourceJSON != "" {
		v.errorf("$.classify.source_json", "keep one of them", "classify has both source_header and source_json")
	}
	for i, r := range c.Rules {
		at := fmt.Sprintf("$.classify.rules[%d]", i)
		found := false
		for _, n := range classNames {
			found = found || n == r.Class
		}
		if !found {
			v.errorf(at+".class", suggest.Hint(r.Class, classNames), "unknown class %q", r.Class)
		}
	}
}

func (v *validator) validateWrites() {
	for i := range v.sc.Writes {
		w := &v.sc.Writes[i]
		at := fmt.Sprintf("$.writes[%d]", i)
		if w.Requests == (RequestFilter{}) {
			v.errorf(at, "add requests: {method: POST, path: /orders}", "write %d does not say which requests are writes", i+1)
		}
		v.validateFilter(at+".requests", w.Requests)
		method, p, _ := strings.Cut(strings.TrimSpace(w.Read), " ")
		p = strings.TrimSpace(p)
		switch {
		case w.Read == "":
			v.errorf(at, "add read: GET /orders/{json.id}", "write %d does not say how to read it back", i+1)
		case !methods[strings.ToUpper(method)] || !(strings.HasPrefix(p, "/") || strings.HasPrefix(p, "{header.")):
			v.errorf(at+".read", "write a method and a path, e.g. GET /orders/{json.id}", "bad read %q", w.Read)
		case strings.Count(p, "{") != len(placeholder.FindAllString(p, -1))+len(captureRef.FindAllString(p, -1)):
			v.errorf(at+".read", "placeholders are {json.PATH}, {header.NAME} and {capture.NAME}", "bad placeholder in read %q", w.Read)
		}
		v.validateReadHeaders(at, w)
	}
}
