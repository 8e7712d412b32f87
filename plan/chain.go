package plan

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/internal/suggest"
)

// HasChains says whether any request template of the load is a chain.
// Such a load runs in chaoskit's own attack loop, whose pacer paces the
// starts of iterations; its plain templates are iterations of one step.
func (l Load) HasChains() bool {
	for _, r := range l.Requests {
		if len(r.Chain) > 0 {
			return true
		}
	}
	return false
}

// StepName is the template name a chain step's requests carry:
// CHAIN/STEP.
func StepName(chain, step string) string { return chain + "/" + step }

// validateChain checks a chain template: a name, no request of its own,
// and steps that are each a valid HTTP request with valid captures.
func (v *validator) validateChain(at string, r *RequestSpec) {
	if r.Name == "" {
		v.errorf(at, "name it, such as name: link-lifecycle: its steps' requests are named CHAIN/STEP", "a chain needs a name")
	}
	v.validateTemplateLabels(at, r)
	for _, f := range []struct {
		name string
		set  bool
	}{{"method", r.Method != ""}, {"path", r.Path != ""}, {"headers", len(r.Headers) > 0}, {"body", r.Body != ""}, {"body_file", r.BodyFile != ""}, {"grpc", r.GRPC != nil}} {
		if f.set {
			v.errorf(at+"."+f.name, "write it in a step of the chain", "a chain has no %s of its own", f.name)
		}
	}
	if len(r.Chain) == 0 {
		v.errorf(at+".chain", "list the steps: chain: [{name: create, method: POST, path: /items}, ...]", "chain %q has no steps", r.Name)
		return
	}
	names := map[string]bool{}
	captures := map[string]bool{}
	for i := range r.Chain {
		s := &r.Chain[i]
		sat := fmt.Sprintf("%s.chain[%d]", at, i)
		if s.Name == "" {
			s.Name = strconv.Itoa(i + 1)
		}
		switch {
		case !templateName.MatchString(s.Name):
			v.errorf(sat+".name", "letters, digits, '_', '-' and '.', such as read", "step name %q cannot be used", s.Name)
		case names[s.Name]:
			v.errorf(sat+".name", "give each step of a chain its own name", "step name %q is used twice in chain %q", s.Name, r.Name)
		}
		names[s.Name] = true
		if s.Method == "" {
			s.Method = "GET"
		}
		s.Method = strings.ToUpper(s.Method)
		if !methods[s.Method] {
			v.errorf(sat+".method", "use GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS", "unknown method %q", s.Method)
		}
		if !strings.HasPrefix(s.Path, "/") {
			v.errorf(sat+".path", "paths start with /", "path %q is not absolute", s.Path)
		} else if _, err := compileTemplate(s.Path); err != nil {
			v.errorf(sat+".path", "write {1..50}, {a|b}, {random:1..50}, {seq} or {capture.NAME}", "%v", err)
		}
		for k, h := range s.Headers {
			if !headerName.MatchString(k) {
				v.errorf(sat+".headers."+k, "write a header name such as Authorization", "%q is not a header name", k)
			}
			if _, err := compileTemplate(h); err != nil {
				v.errorf(sat+".headers."+k, "", "%v", err)
			}
		}
		if _, err := compileTemplate(s.Body); err != nil {
			v.errorf(sat+".body", "", "%v", err)
		}
		for j, tag := range s.Tags {
			if tag == "" || strings.ContainsAny(tag, ",") || strings.HasPrefix(tag, "=") {
				v.errorf(fmt.Sprintf("%s.tags[%d]", sat, j), "a tag is a word such as read: no comma, not empty, not starting with =", "tag %q cannot be used", tag)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(s.Capture)) {
			cat := sat + ".capture." + name
			tmpl := s.Capture[name]
			refs := captureSource.FindAllStringSubmatch(tmpl, -1)
			switch {
			case !captureName.MatchString(name):
				v.errorf(cat, "name it with letters, digits and _, such as code", "capture name %q cannot be used", name)
			case captures[name]:
				v.errorf(cat, "give each capture of a chain its own name", "capture %q is made by an earlier step of chain %q already", name, r.Name)
			case len(refs) == 0 || strings.Count(tmpl, "{") != len(refs):
				v.errorf(cat, "take it from the answer with {json.PATH}, {header.NAME} or {regexp.PATTERN}", "capture %q takes nothing from the step's answer: %q", name, tmpl)
			}
			for _, m := range refs {
				switch m[1] {
				case "json", "header":
				case "regexp":
					if msg := checkPattern(m[2]); msg != "" {
						v.errorf(cat, "write a Go regular expression without braces, with at most one group: {regexp.id=([0-9]+)}", "capture %q: %s", name, msg)
					}
				default:
					v.errorf(cat, "a step's answer is read with {json.PATH}, {header.NAME} or {regexp.PATTERN}", "capture %q reads %s, which an answer does not give", name, m[0])
				}
			}
			captures[name] = true
		}
	}
}

// validateChainCaptures checks the {capture.NAME} a chain's steps use:
// each is made by a setup step (made) or by an earlier step of the same
// iteration, and a chain never captures a name setup captures: the value
// a request got would depend on which of the two was meant.
func (v *validator) validateChainCaptures(at string, r *RequestSpec, made map[string]bool) {
	mine := maps.Clone(made)
	for i := range r.Chain {
		s := &r.Chain[i]
		sat := fmt.Sprintf("%s.chain[%d]", at, i)
		check := func(where string, ss ...string) {
			for _, str := range ss {
				for _, m := range captureRef.FindAllStringSubmatch(str, -1) {
					if mine[m[1]] {
						continue
					}
					hint := "capture it in an earlier step of the chain, such as capture: {" + m[1] + ": \"{json." + m[1] + "}\"}, or in a setup step"
					if best, ok := suggest.Closest(m[1], slices.Collect(maps.Keys(mine))); ok {
						hint = fmt.Sprintf("did you mean %q?", best)
					}
					v.errorf(where, hint, "{capture.%s} is used before a setup step or an earlier step of chain %q captures it", m[1], r.Name)
				}
				if strings.Contains(str, "{capture.") && len(captureRef.FindAllString(str, -1)) != strings.Count(str, "{capture.") {
					v.errorf(where, "a capture is written {capture.NAME}, NAME letters, digits and _", "bad capture placeholder in %q", str)
				}
			}
		}
		check(sat+".path", s.Path)
		check(sat+".body", s.Body)
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			check(sat+".headers."+k, s.Headers[k])
		}
		for _, name := range slices.Sorted(maps.Keys(s.Capture)) {
			if made[name] {
				v.errorf(sat+".capture."+name, "give the chain's capture another name", "capture %q of chain %q has the name of a setup step's capture: a later step could not tell which is meant", name, r.Name)
			}
			mine[name] = true
		}
	}
}

// checkThink refuses a think time of a chain that runs in phase p that
// is as long as the phase or longer: no iteration could send the step.
func (v *validator) checkThink(phaseAt string, p *Phase) {
	at := "$.load"
	if p.Load != nil && len(p.Load.Requests) > 0 {
		at = phaseAt + ".load"
	}
	for j, r := range p.Effective.Requests {
		for i, s := range r.Chain {
			if s.Think > 0 && p.Duration > 0 && s.Think >= p.Duration {
				v.errorf(fmt.Sprintf("%s.requests[%d].chain[%d].think", at, j, i), "think for less than the phase lasts, such as think: 100ms",
					"step %q of chain %q thinks %v, as long as phase %q lasts or longer (%v): it would never be sent", s.Name, r.Name, s.Think.D(), p.Name, p.Duration.D())
			}
		}
	}
}

// compiledStep is one compiled step of a chain, or a plain template's
// only step.
type compiledStep struct {
	name    string // CHAIN/STEP, or the plain template's name
	method  string
	rawPath string
	path    *template
	headers map[string]*template
	body    *template
	tags    []string
	think   time.Duration
	capture map[string]string
	status  []Status
	// needs are the chain captures the step uses, in the order they
	// appear.
	needs []string
}

func compileStep(chain string, tags []string, s ChainStep) (*compiledStep, error) {
	c := &compiledStep{name: StepName(chain, s.Name), method: s.Method, rawPath: s.Path, tags: slices.Concat(tags, s.Tags),
		think: s.Think.D(), capture: s.Capture, status: s.Status}
	var err error
	if c.path, err = compileTemplate(s.Path); err != nil {
		return nil, err
	}
	if c.body, err = compileTemplate(s.Body); err != nil {
		return nil, err
	}
	texts := []string{s.Path, s.Body}
	for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
		t, err := compileTemplate(s.Headers[k])
		if err != nil {
			return nil, err
		}
		if c.headers == nil {
			c.headers = map[string]*template{}
		}
		c.headers[k] = t
		texts = append(texts, s.Headers[k])
	}
	for _, t := range texts {
		for _, m := range captureRef.FindAllStringSubmatch(t, -1) {
			if !slices.Contains(c.needs, m[1]) {
				c.needs = append(c.needs, m[1])
			}
		}
	}
	return c, nil
}

// Iteration is one run of a request template, as NextIteration chose
// it: a chain's steps, or a plain template's one request. It is used by
// one goroutine.
type Iteration struct {
	g     *Generator
	steps []*compiledStep
	n     uint64
	// caps are the values the iteration's steps captured so far, and
	// missing why each capture that could not be made is missing
	// ("create got 500").
	caps    Captures
	missing map[string]string
}

// NextIteration returns the next iteration, the template chosen by
// weight as Next chooses. It is safe for concurrent use.
func (g *Generator) NextIteration() *Iteration {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, n := g.pick()
	if len(s.chain) == 0 {
		return &Iteration{g: g, steps: []*compiledStep{&s.compiledStep}, n: n}
	}
	return &Iteration{g: g, steps: s.chain, n: n}
}

// Len is how many steps the iteration has.
func (it *Iteration) Len() int { return len(it.steps) }

// Think is how long the iteration waits before step i.
func (it *Iteration) Think(i int) time.Duration { return it.steps[i].think }

// Blocked says whether step i needs a capture an earlier step of the
// iteration could not make: its name and why it is missing.
func (it *Iteration) Blocked(i int) (capture, why string, blocked bool) {
	for _, name := range it.steps[i].needs {
		if _, ok := it.caps[name]; !ok && !it.g.hasCapture(name) {
			why := it.missing[name]
			if why == "" {
				why = "no earlier step captured it"
			}
			return name, why, true
		}
	}
	return "", "", false
}

// Request returns step i as a request, its placeholders filled with the
// setup's captures and the iteration's.
func (it *Iteration) Request(i int) Request {
	s := it.steps[i]
	g := it.g
	g.mu.Lock()
	defer g.mu.Unlock()
	caps := g.caps
	if len(it.caps) > 0 {
		caps = maps.Clone(g.caps)
		if caps == nil {
			caps = Captures{}
		}
		maps.Copy(caps, it.caps)
	}
	return g.render(s, it.n, caps)
}

// StepTemplate is the template name of step i's requests.
func (it *Iteration) StepTemplate(i int) string { return it.steps[i].name }

// Take takes step i's captures from its answer: status 0 is no answer.
// A capture that cannot be made is noted with why, for the steps that
// need it (see Blocked).
func (it *Iteration) Take(i, status int, header http.Header, body []byte) {
	s := it.steps[i]
	if len(s.capture) == 0 {
		return
	}
	stepName := s.name[strings.LastIndex(s.name, "/")+1:]
	fail := func(name, why string) {
		if it.missing == nil {
			it.missing = map[string]string{}
		}
		it.missing[name] = why
	}
	var why string
	switch {
	case status == 0:
		why = stepName + " got no response"
	case !succeeded(s.status, status):
		why = fmt.Sprintf("%s got %d", stepName, status)
	}
	for _, name := range slices.Sorted(maps.Keys(s.capture)) {
		if why != "" {
			fail(name, why)
			continue
		}
		v, err := CaptureFrom(s.capture[name], func(kind, key string) (string, bool) {
			return AnswerValue(kind, key, header, string(body))
		})
		if err != nil {
			fail(name, fmt.Sprintf("%s's answer (%d) has no %s", stepName, status, strings.TrimPrefix(err.Error(), "the result has no ")))
			continue
		}
		if it.caps == nil {
			it.caps = Captures{}
		}
		it.caps[name] = v
	}
}

// succeeded says whether status is one of ss, or 2xx when ss is empty.
func succeeded(ss []Status, status int) bool {
	if len(ss) == 0 {
		return status/100 == 2
	}
	for _, r := range statusRanges(ss) {
		if r.Has(status) {
			return true
		}
	}
	return false
}

// hasCapture says whether a setup step captured name.
func (g *Generator) hasCapture(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.caps[name]
	return ok
}

// StepInfo describes a chain step as a request filter sees it: its
// template name, method, path as written and tags.
type StepInfo struct {
	Template string
	Method   string
	Path     string
	Tags     []string
}

// Describe describes step i.
func (it *Iteration) Describe(i int) StepInfo {
	s := it.steps[i]
	return StepInfo{Template: s.name, Method: s.method, Path: s.rawPath, Tags: s.tags}
}

// Captured is what the iteration's steps captured so far, over what the
// setup captured: the values a verification of one of its requests uses.
func (it *Iteration) Captured() Captures {
	it.g.mu.Lock()
	caps := maps.Clone(it.g.caps)
	it.g.mu.Unlock()
	if caps == nil {
		caps = Captures{}
	}
	maps.Copy(caps, it.caps)
	return caps
}
