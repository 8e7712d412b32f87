package plan

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/chaoskit/chaoskit/internal/suggest"
)

// varRefs finds every ${name} (name: a letter or _, then letters, digits,
// _ . -) and every $$ (the escape of a literal $) in text, left to right
// without overlaps, as [start, end, nameStart, nameEnd] with -1 for the
// name of a $$, the shape of regexp's FindAllSubmatchIndex. A scan rather
// than a regexp: a file may hold thousands of references on one long line,
// and the regexp's backtracker allocates state as large as the line for
// each of them (unless a sync.Pool hands it back, which the race detector
// makes it do only sometimes).
func varRefs(text []byte) [][]int {
	var locs [][]int
	for i := 0; i < len(text)-1; i++ {
		if text[i] != '$' {
			continue
		}
		switch text[i+1] {
		case '$':
			locs = append(locs, []int{i, i + 2, -1, -1})
			i++
		case '{':
			if end := refNameEnd(text, i+2); end > i+2 && end < len(text) && text[end] == '}' {
				locs = append(locs, []int{i, end + 1, i + 2, end})
				i = end
			}
		}
	}
	return locs
}

// refNameEnd is the end of the variable name that starts at i in text (i
// itself when there is none).
func refNameEnd(text []byte, i int) int {
	j := i
	for ; j < len(text); j++ {
		c := text[j]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (j == i || !(c >= '0' && c <= '9' || c == '.' || c == '-')) {
			break
		}
	}
	return j
}

// shift records one substitution on a line, in 1-based columns.
type shift struct {
	origCol, origLen, newCol, newLen int
}

// colMap maps columns of the substituted text back to the original file.
type colMap map[int][]shift

// orig returns the column in the original text of col on line.
func (m colMap) orig(line, col int) int {
	delta := 0
	for _, s := range m[line] {
		switch {
		case col >= s.newCol+s.newLen:
			delta = s.origCol + s.origLen - (s.newCol + s.newLen)
		case col >= s.newCol:
			return s.origCol
		default:
			return col + delta
		}
	}
	return col + delta
}

// substitute replaces every ${name} in data with values[name] and $$ with $.
// Unknown names become errors at their position; used lists the names seen.
func substitute(file string, data []byte, values map[string]string) ([]byte, colMap, map[string]bool, ErrorList) {
	m := colMap{}
	used := map[string]bool{}
	var errs ErrorList
	lines := bytes.Split(data, []byte("\n"))
	// size is the length of the text with the substitutions so far; values
	// used many times could make it far longer than the file.
	size := len(data)
	for i, line := range lines {
		if !bytes.Contains(line, []byte("$")) {
			continue
		}
		locs := varRefs(line)
		reps := make([]string, len(locs))
		grow := 0
		for j, loc := range locs {
			rep := "$"
			if loc[2] >= 0 {
				name := string(line[loc[2]:loc[3]])
				used[name] = true
				v, ok := values[name]
				if !ok {
					errs = append(errs, &Error{File: file, Line: i + 1, Col: loc[0] + 1,
						Msg: fmt.Sprintf("variable ${%s} has no value", name), Hint: varHint(name, values), unresolved: true})
					// Blanked out as when the vars were read, so that
					// the rest of the file can still be checked.
					v = strings.Repeat("x", loc[1]-loc[0])
				}
				rep = v
			}
			reps[j] = rep
			grow += len(rep) - (loc[1] - loc[0])
		}
		// The line is built only once its length is known to keep the
		// text within the bound.
		if size += grow; size > MaxFile {
			errs = append(errs, &Error{File: file, Line: i + 1, Col: 1,
				Msg:  fmt.Sprintf("with its variables filled in, the file is larger than the %s a scenario file may hold", mib(MaxFile)),
				Hint: "use long values fewer times, or move large request bodies to body_file"})
			return data, colMap{}, used, errs
		}
		out := make([]byte, 0, len(line)+grow)
		last, shifted := 0, 0
		for j, loc := range locs {
			rep := reps[j]
			out = append(out, line[last:loc[0]]...)
			m[i+1] = append(m[i+1], shift{origCol: loc[0] + 1, origLen: loc[1] - loc[0], newCol: loc[0] + 1 + shifted, newLen: len(rep)})
			shifted += len(rep) - (loc[1] - loc[0])
			out = append(out, rep...)
			last = loc[1]
		}
		lines[i] = append(out, line[last:]...)
	}
	return bytes.Join(lines, []byte("\n")), m, used, errs
}

func varHint(name string, values map[string]string) string {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	if h := suggest.Hint(name, names); strings.HasPrefix(h, "did you mean") {
		return h
	}
	return fmt.Sprintf("declare it under vars: or pass --var %s=VALUE", name)
}

// declaredVars reads the top-level vars mapping of a parsed file. Values
// must be plain scalars.
func declaredVars(file string, f *ast.File, orig []byte) (map[string]string, ErrorList) {
	lines := bytes.Split(orig, []byte("\n"))
	out := map[string]string{}
	if len(f.Docs) == 0 || f.Docs[0] == nil {
		return out, nil
	}
	root, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return out, nil
	}
	var errs ErrorList
	for _, mv := range root.Values {
		if mv.Key.String() != "vars" {
			continue
		}
		if _, isNull := mv.Value.(*ast.NullNode); isNull {
			continue
		}
		vm, ok := mv.Value.(*ast.MappingNode)
		if !ok {
			tk := mv.Value.GetToken()
			errs = append(errs, &Error{File: file, Line: tk.Position.Line, Col: tk.Position.Column, Msg: "vars must be a mapping of names to values", Hint: "write vars: {rate: 200/s}"})
			continue
		}
		for _, v := range vm.Values {
			s, ok := scalar(v.Value)
			if !ok {
				if _, null := v.Value.(*ast.NullNode); null {
					s, ok = "", true
				} else if b, isBool := v.Value.(*ast.BoolNode); isBool {
					s, ok = b.GetToken().Value, true
				}
			}
			if !ok {
				tk := v.Value.GetToken()
				errs = append(errs, &Error{File: file, Line: tk.Position.Line, Col: tk.Position.Column, Msg: fmt.Sprintf("var %s must be a plain value", v.Key.String())})
				continue
			}
			// A value was read with its ${name} references blanked out:
			// vars do not refer to one another.
			if tk := v.Value.GetToken(); tk != nil && tk.Position.Line-1 < len(lines) {
				line := lines[tk.Position.Line-1]
				if c := tk.Position.Column - 1; c >= 0 && c < len(line) && len(varRefs(bytes.ReplaceAll(line[c:], []byte("$$"), nil))) > 0 {
					errs = append(errs, &Error{File: file, Line: tk.Position.Line, Col: tk.Position.Column,
						Msg: fmt.Sprintf("var %s uses another variable", v.Key.String()), Hint: "give vars plain values; combine them where they are used"})
					continue
				}
			}
			// The file's text escapes a literal $ as $$, values under vars
			// included; they are read before substitution, so unescape here.
			out[v.Key.String()] = strings.ReplaceAll(s, "$$", "$")
		}
	}
	return out, errs
}

// shapeOf lists the paths of every mapping key and sequence item of a
// parsed file, with where each is written.
func shapeOf(f *ast.File) map[string]*token.Token {
	out := map[string]*token.Token{}
	if f == nil || len(f.Docs) == 0 || f.Docs[0] == nil || f.Docs[0].Body == nil {
		return out
	}
	var walk func(n ast.Node, path string, depth int)
	walk = func(n ast.Node, path string, depth int) {
		if n == nil || depth > MaxDepth {
			return
		}
		switch v := n.(type) {
		case *ast.AnchorNode:
			walk(v.Value, path, depth+1)
		case *ast.TagNode:
			walk(v.Value, path, depth+1)
		case *ast.MappingNode:
			for _, mv := range v.Values {
				p := path + "." + mv.Key.String()
				out[p] = mv.Key.GetToken()
				walk(mv.Value, p, depth+1)
			}
		case *ast.MappingValueNode:
			p := path + "." + v.Key.String()
			out[p] = v.Key.GetToken()
			walk(v.Value, p, depth+1)
		case *ast.SequenceNode:
			for i, e := range v.Values {
				p := fmt.Sprintf("%s[%d]", path, i)
				out[p] = e.GetToken()
				walk(e, p, depth+1)
			}
		}
	}
	walk(f.Docs[0].Body, "$", 0)
	return out
}

// sameShape refuses a file whose variables, filled in, made a key or a
// list item the file does not write itself: a value is a value, whatever
// it holds (quotes, newlines, YAML of its own), and never adds a field.
func sameShape(file string, written, filled *ast.File, cols colMap) ErrorList {
	before, after := shapeOf(written), shapeOf(filled)
	// In the order they are written, and only the outermost of what was
	// added: one error for a dependency, not one for each of its keys.
	paths := make([]string, 0, len(after))
	for p := range after {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		a, b := after[paths[i]], after[paths[j]]
		if a != nil && b != nil && a.Position != nil && b.Position != nil && (a.Position.Line != b.Position.Line || a.Position.Column != b.Position.Column) {
			if a.Position.Line != b.Position.Line {
				return a.Position.Line < b.Position.Line
			}
			return a.Position.Column < b.Position.Column
		}
		return paths[i] < paths[j]
	})
	var errs ErrorList
	var added []string
	for _, p := range paths {
		tk := after[p]
		if _, ok := before[p]; ok {
			continue
		}
		if slices.ContainsFunc(added, func(a string) bool { return strings.HasPrefix(p, a+".") || strings.HasPrefix(p, a+"[") }) {
			continue
		}
		added = append(added, p)
		e := &Error{File: file, Msg: fmt.Sprintf("a variable's value adds %s to the scenario", p),
			Hint: "a variable holds one value: quote it where it is used, and give --var values without YAML structure (newlines, quotes, : or braces)"}
		if tk != nil && tk.Position != nil {
			e.Line, e.Col = tk.Position.Line, cols.orig(tk.Position.Line, tk.Position.Column)
		}
		errs = append(errs, e)
		if len(errs) >= 3 {
			break
		}
	}
	return errs
}
