package plan

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/internal/suggest"
)

// Verify is a post-recovery invariant: after the last phase (and the
// read-back), with every fault off, chaoskit sends one verification
// request for each recorded request the rule selects, made from what that
// request's chain captured and what it was answered, and judges the
// answer: the invariant holds (ok), is violated, or could not be told
// (unknown). "Every link deleted during the run no longer redirects" is
// a rule that selects the deletes and reads each deleted code back,
// expecting 404. The contract predicate violated_verifications judges
// the results; the runner only records them (timeline.Verify).
type Verify struct {
	// Name names the rule in the evidence and on the timeline.
	Name string `yaml:"name"`
	// Requests selects the recorded requests to verify, as a contract's
	// requests: does (a chain step is selected by its template,
	// CHAIN/STEP, or its tags).
	Requests RequestFilter `yaml:"requests"`
	// Status lists the statuses of a selected request that make it need
	// verifying; default 2xx (a delete that failed deleted nothing).
	Status []Status `yaml:"status"`
	// Request is the verification request: a method and a path on the
	// target. {capture.NAME} is a value the selected request's chain
	// iteration (or a setup step) captured; {json.PATH}, {header.NAME}
	// and {regexp.PATTERN} read the selected request's answer.
	Request string `yaml:"request"`
	// Headers are sent with every verification request; values take the
	// placeholders of Request and {env.NAME}, read from chaoskit's
	// environment and never recorded.
	Headers map[string]string `yaml:"headers"`
	// Expect lists the statuses that say the invariant holds, such as
	// 404 for a deleted link. Required.
	Expect []Status `yaml:"expect"`
	// BodyContains, when set, is a text an answer with an expected status
	// must also hold for the invariant to hold.
	BodyContains string `yaml:"body_contains"`
	// Within bounds the verification: a request that gets no answer, or
	// 408, 425, 429 or a 5xx, is tried again with backoff until this
	// long after the verification began; default 10s, at most 5m.
	Within Duration `yaml:"within"`
}

// defaultVerifyWithin is Verify.Within when the scenario does not say;
// maxVerifyWithin bounds it.
const (
	defaultVerifyWithin = 10 * time.Second
	maxVerifyWithin     = 5 * time.Minute
)

// Deadline is how long the rule's verification requests may keep trying.
func (v *Verify) Deadline() time.Duration {
	if v.Within > 0 {
		return v.Within.D()
	}
	return defaultVerifyWithin
}

// Selects reports whether a recorded request with these properties is one
// the rule verifies.
func (v *Verify) Selects(method, urlPath string, tags []string, template string, status int) bool {
	return v.Requests.filter().Match(method, urlPath, tags, template) && succeeded(v.Status, status)
}

// Expected says whether status is one the rule expects.
func (v *Verify) Expected(status int) bool {
	return len(v.Expect) > 0 && succeeded(v.Expect, status)
}

// ExpectText names the expected statuses as written: "404, 410".
func (v *Verify) ExpectText() []string {
	out := make([]string, len(v.Expect))
	for i, s := range v.Expect {
		out[i] = string(s)
	}
	return out
}

// verifyPlaceholder matches what a verification request and its headers
// read besides captures: {json.PATH}, {header.NAME} and {regexp.PATTERN}
// of the selected request's answer, and {env.NAME}.
var verifyPlaceholder = regexp.MustCompile(`\{(json|header|regexp|env)\.([^{}]+)\}`)

// Render makes the verification request of one selected request: its
// captures (the chain iteration's over the setup's) and its answer fill
// the placeholders, getenv (os.LookupEnv when nil) the {env.NAME} of the
// headers. An error says what is missing; nothing is sent then.
func (v *Verify) Render(caps Captures, header http.Header, body string, getenv func(string) (string, bool)) (method, urlPath string, hdr http.Header, err error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	fill := func(what, s string) string {
		s = caps.Fill(s)
		if m := captureRef.FindStringSubmatch(s); m != nil && err == nil {
			err = fmt.Errorf("%s: no %s was captured for this request", what, m[0])
		}
		return verifyPlaceholder.ReplaceAllStringFunc(s, func(m string) string {
			sub := verifyPlaceholder.FindStringSubmatch(m)
			var val string
			var ok bool
			if sub[1] == "env" {
				val, ok = getenv(sub[2])
			} else {
				val, ok = AnswerValue(sub[1], sub[2], header, body)
			}
			if !ok && err == nil {
				err = fmt.Errorf("%s: the selected request's answer has no %s", what, m)
				if sub[1] == "env" {
					err = fmt.Errorf("%s: environment variable %s is not set", what, sub[2])
				}
			}
			return val
		})
	}
	method, tmpl, _ := strings.Cut(strings.TrimSpace(v.Request), " ")
	urlPath = fill("request", strings.TrimSpace(tmpl))
	for _, k := range slices.Sorted(maps.Keys(v.Headers)) {
		if hdr == nil {
			hdr = http.Header{}
		}
		hdr.Set(k, fill("headers "+k, v.Headers[k]))
	}
	return strings.ToUpper(method), urlPath, hdr, err
}

// validateVerify checks the verify: rules: a name, a selection, a request
// on the target with known placeholders, expected statuses, a bounded
// within. made are the captures of the setup and of every chain step.
func (v *validator) validateVerify(made map[string]bool) {
	names := map[string]bool{}
	for i := range v.sc.Verify {
		r := &v.sc.Verify[i]
		at := fmt.Sprintf("$.verify[%d]", i)
		switch {
		case strings.TrimSpace(r.Name) == "":
			v.errorf(at, "add name: what the verification checks, such as deleted links stop redirecting", "verify rule %d has no name", i+1)
		case names[r.Name]:
			v.errorf(at+".name", "give each verify rule its own name", "verify rule name %q is used twice", r.Name)
		}
		names[r.Name] = true
		if r.Requests == (RequestFilter{}) {
			v.errorf(at, "add requests: {template: link-lifecycle/delete}, the requests whose effect is verified", "verify rule %q does not say which requests to verify", r.Name)
		}
		v.validateFilter(at+".requests", r.Requests)
		method, p, _ := strings.Cut(strings.TrimSpace(r.Request), " ")
		p = strings.TrimSpace(p)
		switch {
		case r.Request == "":
			v.errorf(at, "add request: GET /{capture.code}", "verify rule %q has no request", r.Name)
		case !methods[strings.ToUpper(method)] || !strings.HasPrefix(p, "/"):
			v.errorf(at+".request", "write a method and a path on the target, such as GET /{capture.code}", "bad verification request %q", r.Request)
		}
		texts := map[string]string{at + ".request": p}
		for _, k := range slices.Sorted(maps.Keys(r.Headers)) {
			if !headerName.MatchString(k) {
				v.errorf(at+".headers."+k, "write a header name such as Authorization", "%q is not a header name", k)
			}
			texts[at+".headers."+k] = r.Headers[k]
		}
		for _, where := range slices.Sorted(maps.Keys(texts)) {
			s := texts[where]
			if strings.Count(s, "{") != len(verifyPlaceholder.FindAllString(s, -1))+len(captureRef.FindAllString(s, -1)) {
				v.errorf(where, "placeholders are {capture.NAME}, {json.PATH}, {header.NAME}, {regexp.PATTERN} and, in headers, {env.NAME}", "bad placeholder in %q", s)
				continue
			}
			for _, m := range verifyPlaceholder.FindAllStringSubmatch(s, -1) {
				switch {
				case m[1] == "env" && where == at+".request":
					v.errorf(where, "send a secret in headers, never in the path", "the verification request's path reads environment variable %s", m[2])
				case m[1] == "env":
					if _, ok := os.LookupEnv(m[2]); !ok {
						v.errorf(where, fmt.Sprintf("export %s before the run, or write the value as ${var} with --var NAME=VALUE", m[2]), "verify rule %q reads environment variable %s, which is not set", r.Name, m[2])
					}
				case m[1] == "regexp":
					if msg := checkPattern(m[2]); msg != "" {
						v.errorf(where, "write a Go regular expression without braces, with at most one group: {regexp.id=([0-9]+)}", "%s", msg)
					}
				}
			}
			for _, m := range captureRef.FindAllStringSubmatch(s, -1) {
				if !made[m[1]] {
					hint := "capture it in a step of the chain whose request is verified, such as capture: {" + m[1] + ": \"{json." + m[1] + "}\"}, or in a setup step"
					if best, ok := suggest.Closest(m[1], slices.Collect(maps.Keys(made))); ok {
						hint = fmt.Sprintf("did you mean %q?", best)
					}
					v.errorf(where, hint, "{capture.%s} is used by verify rule %q, and no setup step or chain step captures it", m[1], r.Name)
				}
			}
		}
		if len(r.Expect) == 0 {
			v.errorf(at, "add expect: [404], the statuses that say the invariant holds", "verify rule %q does not say what answer it expects", r.Name)
		}
		switch {
		case r.Within < 0:
			v.errorf(at+".within", "", "within %v is negative", r.Within.D())
		case r.Within.D() > maxVerifyWithin:
			v.errorf(at+".within", "verify within at most 5m", "within %v is longer than %v", r.Within.D(), maxVerifyWithin)
		}
	}
}

// chainCaptures adds to made the names every chain step of the scenario's
// loads captures.
func (sc *Scenario) chainCaptures(made map[string]bool) {
	for _, l := range sc.loadsAt() {
		for _, r := range l.l.Requests {
			for _, s := range r.Chain {
				for name := range s.Capture {
					made[name] = true
				}
			}
		}
	}
}
