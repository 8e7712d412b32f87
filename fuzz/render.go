package fuzz

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/plan"
)

// Render returns the text of the ordinary scenario that runs schedule s
// against the fuzz scenario base: base's target, load, writes,
// classification and contracts, with s's phases instead of the fuzz
// section, every variable filled in and every relative path made absolute,
// so the file runs the same from any directory. name names the scenario;
// comment, when given, heads the file.
func Render(base *plan.Scenario, s Schedule, name, comment string) ([]byte, error) {
	text, err := base.Expanded()
	if err != nil {
		return nil, err
	}
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(text, &doc, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("%s: %w", base.File, err)
	}
	doc = escapeDollars(doc).(yaml.MapSlice)
	dir := filepath.Dir(base.File)
	var out yaml.MapSlice
	for _, it := range doc {
		switch key(it) {
		case "fuzz", "vars", "phases", "include", "include_dirs":
			continue
		case "name":
			it.Value = name
		case "target":
			it.Value = absTarget(it.Value, dir)
		case "dependencies":
			it.Value = absDependencies(it.Value, dir)
		case "load":
			it.Value = renderLoad(it.Value, base, s, dir)
		case "contracts":
			// The phases go before the contracts, as people write them.
			out = append(out, yaml.MapItem{Key: "phases", Value: renderPhases(s)})
		}
		out = append(out, it)
	}
	if !has(out, "phases") {
		out = append(out, yaml.MapItem{Key: "phases", Value: renderPhases(s)})
	}
	data, err := yaml.MarshalWithOptions(out, yaml.Indent(2), yaml.IndentSequence(true), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSpace(comment), "\n") {
		if comment != "" {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	b.Write(data)
	return b.Bytes(), nil
}

func key(it yaml.MapItem) string { s, _ := it.Key.(string); return s }

func has(m yaml.MapSlice, k string) bool {
	for _, it := range m {
		if key(it) == k {
			return true
		}
	}
	return false
}

// escapeDollars writes every $ of a string value as $$, so the rendered
// file reads back as the values it was rendered from.
func escapeDollars(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "$", "$$")
	case yaml.MapSlice:
		for i := range v {
			v[i].Value = escapeDollars(v[i].Value)
		}
		return v
	case []any:
		for i := range v {
			v[i] = escapeDollars(v[i])
		}
		return v
	}
	return v
}

// absPath makes a path relative to the scenario's directory absolute.
func absPath(v any, dir string) any {
	p, ok := v.(string)
	if !ok || p == "" || filepath.IsAbs(p) {
		return v
	}
	abs, err := filepath.Abs(filepath.Join(dir, p))
	if err != nil {
		return v
	}
	return abs
}

func absTarget(v any, dir string) any {
	t, ok := v.(yaml.MapSlice)
	if !ok {
		return v
	}
	for i := range t {
		switch key(t[i]) {
		case "source":
			t[i].Value = absPath(t[i].Value, dir)
		case "command":
			if c, ok := t[i].Value.(yaml.MapSlice); ok {
				found := false
				for j := range c {
					if key(c[j]) == "dir" {
						c[j].Value, found = absPath(c[j].Value, dir), true
					}
				}
				if !found {
					c = append(c, yaml.MapItem{Key: "dir", Value: absPath(".", dir)})
				}
				t[i].Value = c
			}
		}
	}
	return t
}

// absDependencies makes each dependency command's dir absolute, as
// absTarget does the target's.
func absDependencies(v any, dir string) any {
	deps, ok := v.([]any)
	if !ok {
		return v
	}
	for i, d := range deps {
		m, ok := d.(yaml.MapSlice)
		if !ok {
			continue
		}
		for j := range m {
			if key(m[j]) == "command" {
				// absTarget's command rule, on a one-field target.
				t := absTarget(yaml.MapSlice{{Key: "command", Value: m[j].Value}}, dir).(yaml.MapSlice)
				m[j].Value = t[0].Value
			}
		}
		deps[i] = m
	}
	return deps
}

func renderLoad(v any, base *plan.Scenario, s Schedule, dir string) any {
	l, ok := v.(yaml.MapSlice)
	if !ok {
		return v
	}
	for i := range l {
		switch key(l[i]) {
		case "rate":
			if s.Scale() != 1 {
				l[i].Value = base.Load.Rate.Scale(s.Scale()).String()
			}
		case "requests":
			if reqs, ok := l[i].Value.([]any); ok {
				for _, r := range reqs {
					if m, ok := r.(yaml.MapSlice); ok {
						for j := range m {
							if key(m[j]) == "body_file" {
								m[j].Value = absPath(m[j].Value, dir)
							}
						}
					}
				}
			}
		}
	}
	return l
}

func renderPhases(s Schedule) []any {
	out := make([]any, len(s.Phases))
	for i, p := range s.Phases {
		m := yaml.MapSlice{{Key: "name", Value: p.Name}, {Key: "duration", Value: p.Duration.String()}}
		if len(p.Faults) > 0 {
			fs := make([]any, len(p.Faults))
			for j, f := range p.Faults {
				fm := yaml.MapSlice{{Key: "point", Value: f.Point}, {Key: "action", Value: string(f.Action)}}
				switch {
				case f.Process != "":
					fm[0] = yaml.MapItem{Key: "process", Value: f.Process}
				case f.Proxy != "":
					// A TCP proxy's latency is a setting by name; an HTTP or
					// gRPC proxy's abort and delay take a value, and the
					// requests it acts on a match.
					fm[0] = yaml.MapItem{Key: "proxy", Value: f.Proxy}
					switch {
					case f.Value != "" && f.Action == "latency":
						fm = append(fm, yaml.MapItem{Key: "latency", Value: f.Value})
					case f.Value != "":
						fm = append(fm, yaml.MapItem{Key: "value", Value: f.Value})
					}
					if f.Match != nil {
						fm = append(fm, yaml.MapItem{Key: "match", Value: renderMatch(f.Match)})
					}
				case f.Value != "":
					fm = append(fm, yaml.MapItem{Key: "value", Value: strings.ReplaceAll(f.Value, "$", "$$")})
				}
				if f.Probability > 0 && f.Probability < 1 {
					fm = append(fm, yaml.MapItem{Key: "probability", Value: f.Probability})
				}
				if f.After > 0 {
					fm = append(fm, yaml.MapItem{Key: "after", Value: f.After.String()})
				}
				if f.For > 0 {
					fm = append(fm, yaml.MapItem{Key: "for", Value: f.For.String()})
				}
				fs[j] = fm
			}
			m = append(m, yaml.MapItem{Key: "faults", Value: fs})
		}
		out[i] = m
	}
	return out
}

// Load renders s against base and loads the result as `chaoskit run`
// would, as if from file.
func Load(base *plan.Scenario, s Schedule, name, file, comment string, opts plan.Options) (*plan.Scenario, []byte, error) {
	text, err := Render(base, s, name, comment)
	if err != nil {
		return nil, nil, err
	}
	opts.Vars, opts.RateScale = nil, 0
	sc, err := plan.Parse(file, text, opts)
	return sc, text, err
}

// renderMatch writes a match as the scenario does.
func renderMatch(m *fault.Match) yaml.MapSlice {
	var out yaml.MapSlice
	for _, kv := range [][2]string{{"method", m.Method}, {"path", m.Path}, {"grpc_method", m.GRPCMethod}} {
		if kv[1] != "" {
			out = append(out, yaml.MapItem{Key: kv[0], Value: kv[1]})
		}
	}
	if len(m.Headers) > 0 {
		var hs yaml.MapSlice
		for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
			hs = append(hs, yaml.MapItem{Key: k, Value: m.Headers[k]})
		}
		out = append(out, yaml.MapItem{Key: "headers", Value: hs})
	}
	return out
}
