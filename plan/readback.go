package plan

import (
	"fmt"
	"net/http"
	"net/textproto"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// defaultReadWithin is how long after the last phase a write's read-back
// may keep trying through transient failures, when the scenario does not
// say (writes[].read_within).
const defaultReadWithin = 10 * time.Second

// headerPlaceholder matches the placeholders of a read-back header value:
// those of Read, and {env.NAME}.
var headerPlaceholder = regexp.MustCompile(`\{(json|header|env)\.([^{}]+)\}`)

// headerName is an HTTP header field name (RFC 9110's token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// Within is how long after the last phase the read-back of these writes
// may keep trying.
func (w *Write) Within() time.Duration {
	if w.ReadWithin > 0 {
		return w.ReadWithin.D()
	}
	return defaultReadWithin
}

// IsMissing reports whether a read that answered status says the write is
// not there (404 and 410 unless the scenario lists others).
func (w *Write) IsMissing(status int) bool {
	if len(w.Missing) == 0 {
		return status == http.StatusNotFound || status == http.StatusGone
	}
	for _, r := range statusRanges(w.Missing) {
		if r.Has(status) {
			return true
		}
	}
	return false
}

// MissingStatuses are the statuses the scenario lists as missing, as
// written ("404", "4xx"); nil for the default.
func (w *Write) MissingStatuses() []string {
	if len(w.Missing) == 0 {
		return nil
	}
	out := make([]string, len(w.Missing))
	for i, s := range w.Missing {
		out[i] = string(s)
	}
	return out
}

// MissingText names the statuses that say a write is missing: "404, 410".
func (w *Write) MissingText() string {
	if len(w.Missing) == 0 {
		return "404, 410"
	}
	out := make([]string, len(w.Missing))
	for i, s := range w.Missing {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}

// ReadHeaderValues fills the read-back headers from an acknowledgement's
// kept headers and body and from the environment (getenv, os.LookupEnv
// when nil). The values are sent, never recorded.
func (w *Write) ReadHeaderValues(headers map[string]string, body string, getenv func(string) (string, bool)) (http.Header, error) {
	return w.ReadHeaderValuesWith(headers, body, getenv, nil)
}

// ReadHeaderValuesWith is ReadHeaderValues with the values setup steps
// captured, for {capture.NAME} placeholders.
func (w *Write) ReadHeaderValuesWith(headers map[string]string, body string, getenv func(string) (string, bool), caps Captures) (http.Header, error) {
	if len(w.ReadHeaders) == 0 {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	out := http.Header{}
	names := make([]string, 0, len(w.ReadHeaders))
	for k := range w.ReadHeaders {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		var err error
		v := headerPlaceholder.ReplaceAllStringFunc(caps.Fill(w.ReadHeaders[name]), func(m string) string {
			sub := headerPlaceholder.FindStringSubmatch(m)
			if sub[1] == "env" {
				v, ok := getenv(sub[2])
				if !ok && err == nil {
					err = fmt.Errorf("read_headers %s: environment variable %s is not set", name, sub[2])
				}
				return v
			}
			v, ok := fillPlaceholder(sub[1], sub[2], headers, body)
			if !ok && err == nil {
				err = fmt.Errorf("read_headers %s: the acknowledgement has no %s.%s", name, sub[1], sub[2])
			}
			return v
		})
		if err != nil {
			return nil, err
		}
		out.Set(name, v)
	}
	return out, nil
}

// validateReadHeaders checks a write's read_headers: valid names, known
// placeholders, and every {env.NAME} set in this environment (a run
// started without it would read nothing back).
func (v *validator) validateReadHeaders(at string, w *Write) {
	names := make([]string, 0, len(w.ReadHeaders))
	for k := range w.ReadHeaders {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		val := w.ReadHeaders[name]
		path := at + ".read_headers." + name
		if !headerName.MatchString(name) {
			v.errorf(path, "write a header name such as Authorization", "read_headers: %q is not a header name", name)
			continue
		}
		if strings.Count(val, "{") != len(headerPlaceholder.FindAllString(val, -1))+len(captureRef.FindAllString(val, -1)) {
			v.errorf(path, "placeholders are {env.NAME}, {json.PATH}, {header.NAME} and {capture.NAME}", "bad placeholder in read_headers %s: %q", name, val)
			continue
		}
		for _, m := range headerPlaceholder.FindAllStringSubmatch(val, -1) {
			if m[1] != "env" {
				continue
			}
			if _, ok := os.LookupEnv(m[2]); !ok {
				v.errorf(path, fmt.Sprintf("export %s before the run, or write the value as ${var} with --var NAME=VALUE; a run records --var values, never environment ones", m[2]),
					"read_headers %s reads environment variable %s, which is not set", name, m[2])
			}
		}
	}
}

// headerRefs names the acknowledgement headers the read-back headers take.
func (w *Write) headerRefs() []string {
	var out []string
	for _, v := range w.ReadHeaders {
		for _, m := range headerPlaceholder.FindAllStringSubmatch(v, -1) {
			if m[1] == "header" {
				out = append(out, textproto.CanonicalMIMEHeaderKey(m[2]))
			}
		}
	}
	sort.Strings(out)
	return out
}
