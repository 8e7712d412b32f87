package plan

import (
	"fmt"
	"reflect"

	"github.com/goccy/go-yaml"
)

// Expanded returns the scenario as one document that loads, from any
// directory, as the scenario did: the files it includes merged in under
// its own fields as the loader merges them, every ${name} replaced by its
// value and every $$ by $, and no include or include_dirs left. (Relative
// paths in it stay relative to the scenario's own directory.) It is what
// chaoskit fuzz renders trials and reproducers from, which are written
// elsewhere and where the scenario's includes are not.
func (sc *Scenario) Expanded() ([]byte, error) {
	text, _, _, errs := substitute(sc.File, sc.Source, sc.Values)
	if len(errs) > 0 {
		return nil, errs
	}
	if len(sc.Included) == 0 {
		return text, nil
	}
	t := reflect.TypeFor[Scenario]()
	var doc any
	for _, inc := range sc.Included {
		part, err := expandedPart(inc.Path, inc.Data, sc.Values)
		if err != nil {
			return nil, err
		}
		doc = mergeDecoded(doc, part, t)
	}
	own, err := expandedPart(sc.File, sc.Source, sc.Values)
	if err != nil {
		return nil, err
	}
	doc = mergeDecoded(doc, own, t)
	m, _ := doc.(yaml.MapSlice)
	var out yaml.MapSlice
	for _, it := range m {
		if k, _ := it.Key.(string); k != "include" && k != "include_dirs" {
			out = append(out, it)
		}
	}
	return yaml.Marshal(out)
}

// expandedPart is one file of a scenario, its variables filled in, as
// plain YAML values.
func expandedPart(file string, data []byte, values map[string]string) (any, error) {
	text, _, _, errs := substitute(file, data, values)
	if len(errs) > 0 {
		return nil, errs
	}
	var v yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(text, &v, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}

// mergeDecoded returns what decoding src over dst, both plain YAML values
// of a field of type t, leaves, as the YAML decoder does it when a file is
// decoded over the files it includes: a mapping into a struct (or a
// pointer to one) merges key by key; a Go map, a list or a plain value is
// replaced; null resets a pointer and leaves anything else as it was.
func mergeDecoded(dst, src any, t reflect.Type) any {
	if src == nil {
		if t.Kind() == reflect.Pointer {
			return nil
		}
		return dst
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(nodeUnmarshaler) || t.Kind() != reflect.Struct {
		return src
	}
	d, ok1 := dst.(yaml.MapSlice)
	s, ok2 := src.(yaml.MapSlice)
	if !ok1 || !ok2 {
		return src
	}
	fields := structFields(t)
	out := append(yaml.MapSlice(nil), d...)
	for _, it := range s {
		k, _ := it.Key.(string)
		f, known := fields.byName[k]
		i := indexOf(out, k)
		switch {
		case i < 0:
			out = append(out, it)
		case !known:
			out[i].Value = it.Value
		default:
			out[i].Value = mergeDecoded(out[i].Value, it.Value, f.Type)
		}
	}
	return out
}

func indexOf(m yaml.MapSlice, key string) int {
	for i, it := range m {
		if k, _ := it.Key.(string); k == key {
			return i
		}
	}
	return -1
}
