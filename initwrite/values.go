package initwrite

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// maxValues is how many example values of a parameter the load takes
// from a listing.
const maxValues = 5

// safeValue is a value a load path can hold as it is, inside a {a|b}
// template too.
var safeValue = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,64}$`)

// valuesFrom reads example values of a path parameter from a listing's
// JSON body: the elements of the top-level array (or of the first array
// in a top-level object), their field named like the parameter (id for
// itemID or item_id when there is no such field), or the elements
// themselves when they are numbers or strings.
func valuesFrom(body []byte, param string) []string {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return nil
	}
	elems, ok := doc.([]any)
	if !ok {
		if obj, ok := doc.(map[string]any); ok {
			for _, v := range obj {
				if a, ok := v.([]any); ok && len(a) > 0 {
					elems = a
					break
				}
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range elems {
		v, ok := scalar(e)
		if obj, isObj := e.(map[string]any); isObj {
			v, ok = field(obj, param)
		}
		if ok && safeValue.MatchString(v) && !seen[v] {
			seen[v] = true
			out = append(out, v)
			if len(out) == maxValues {
				break
			}
		}
	}
	return out
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// field finds the parameter's field in a listed object.
func field(obj map[string]any, param string) (string, bool) {
	lower := strings.ToLower(param)
	names := []string{lower}
	for _, suffix := range []string{"_id", "id"} {
		if base := strings.TrimSuffix(lower, suffix); base != lower && base != "" {
			names = append(names, "id", base+"_id")
		}
	}
	names = append(names, "id")
	for _, n := range names {
		for k, v := range obj {
			if strings.ToLower(k) == n {
				if s, ok := scalar(v); ok {
					return s, true
				}
			}
		}
	}
	return "", false
}
