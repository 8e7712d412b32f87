package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
)

// rangeTemplate matches {lo..hi} in a request path.
var rangeTemplate = regexp.MustCompile(`\{(-?[0-9]+)\.\.(-?[0-9]+)\}`)

// MaxExpansion bounds how many paths one template may expand to.
const MaxExpansion = 100000

// ExpandPath expands every {lo..hi} range in path, in order, into the list
// of concrete paths (the cartesian product when there are several).
func ExpandPath(path string) ([]string, error) {
	loc := rangeTemplate.FindStringSubmatchIndex(path)
	if loc == nil {
		return []string{path}, nil
	}
	lo, err1 := strconv.Atoi(path[loc[2]:loc[3]])
	hi, err2 := strconv.Atoi(path[loc[4]:loc[5]])
	if err1 != nil || err2 != nil || hi < lo {
		return nil, fmt.Errorf("range %s in path %q must go from low to high", path[loc[0]:loc[1]], path)
	}
	rest, err := ExpandPath(path[loc[1]:])
	if err != nil {
		return nil, err
	}
	n := (hi - lo + 1) * len(rest)
	if n > MaxExpansion || n < 0 {
		return nil, fmt.Errorf("path %q expands to more than %d requests", path, MaxExpansion)
	}
	out := make([]string, 0, n)
	for i := lo; i <= hi; i++ {
		for _, r := range rest {
			out = append(out, path[:loc[0]]+strconv.Itoa(i)+r)
		}
	}
	return out, nil
}

// Request is one concrete request a load generator sends.
type Request struct {
	Method  string
	Path    string
	Headers map[string]string
	Body    string
}

// Target returns the request's key in a timeline, e.g. "GET /products/7".
func (r Request) Target() string { return r.Method + " " + r.Path }

// Expand returns the concrete requests of a load, in the order they are sent
// round-robin.
func (l Load) Expand() ([]Request, error) {
	var out []Request
	for _, spec := range l.Requests {
		paths, err := ExpandPath(spec.Path)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			out = append(out, Request{Method: spec.Method, Path: p, Headers: spec.Headers, Body: spec.Body})
		}
	}
	return out, nil
}
