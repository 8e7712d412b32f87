package plan

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/chaoskit/chaoskit/internal/suggest"
)

// The YAML decoder stops at the first unknown field or wrong value, so a
// file with three mistakes took three rounds of validate to fix. checker
// walks a parsed file along the Scenario type instead and records every
// unknown field and every value that does not decode, each at its place;
// the decoder then runs without its strict check, so that validation sees
// everything that did decode.

// checker records the schema errors of one file.
type checker struct {
	file    string
	cols    colMap
	anchors map[string]ast.Node
	errs    ErrorList
	// failed holds the YAML paths whose value is wrong or whose name is
	// unknown (and, for a misspelt name, the path of the name it is
	// likely to mean), so that validation does not report the same
	// mistake again as a missing or empty field.
	failed map[string]bool
}

var nodeUnmarshaler = reflect.TypeFor[yaml.NodeUnmarshaler]()

// check walks n, the value at path, as a value of type t. set replaces n
// in the tree (nil for the root): a value that does not decode is replaced
// by null, so that the decoder, which drops the whole of a mapping one of
// whose values fails, decodes everything else.
func (c *checker) check(n ast.Node, t reflect.Type, path string, set func(ast.Node)) {
	// An anchor or a tag holds the value: replace inside it.
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n, set = v.Value, func(x ast.Node) { v.Value = x }
			continue
		case *ast.TagNode:
			n, set = v.Value, func(x ast.Node) { v.Value = x }
			continue
		}
		break
	}
	n = c.resolve(n)
	if n == nil {
		return
	}
	if _, null := n.(*ast.NullNode); null {
		return
	}
	if reflect.PointerTo(t).Implements(nodeUnmarshaler) {
		c.leaf(n, t, path, set)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		c.check(n, t.Elem(), path, set)
	case reflect.Struct:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			c.leaf(n, t, path, set)
			return
		}
		c.fields(m, t, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			c.leaf(n, t, path, set)
			return
		}
		for i, e := range seq.Values {
			c.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), func(x ast.Node) { seq.Values[i] = x })
		}
	case reflect.Map:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			c.leaf(n, t, path, set)
			return
		}
		for _, mv := range m.Values {
			c.check(mv.Value, t.Elem(), path+"."+mv.Key.String(), func(x ast.Node) { mv.Value = x })
		}
	default:
		c.leaf(n, t, path, set)
	}
}

// fields checks the keys of a mapping decoded into struct type t.
func (c *checker) fields(m *ast.MappingNode, t reflect.Type, path string) {
	known := structFields(t)
	for _, mv := range m.Values {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			// <<: *base (or a list of them) merges mappings into this one.
			v := c.resolve(mv.Value)
			if seq, ok := v.(*ast.SequenceNode); ok {
				for _, e := range seq.Values {
					if em, ok := c.resolve(e).(*ast.MappingNode); ok {
						c.fields(em, t, path)
					}
				}
			} else if vm, ok := v.(*ast.MappingNode); ok {
				c.fields(vm, t, path)
			}
			continue
		}
		name := mv.Key.String()
		f, ok := known.byName[name]
		if !ok {
			tk := mv.Key.GetToken()
			e := &Error{File: c.file, Msg: fmt.Sprintf("unknown field %q", name), Hint: fieldHint(name, known.names)}
			if tk != nil {
				e.Line, e.Col = tk.Position.Line, c.cols.orig(tk.Position.Line, tk.Position.Column)
			}
			c.errs = append(c.errs, e)
			c.failed[path+"."+name] = true
			if s, ok := suggest.Closest(name, known.names); ok {
				c.failed[path+"."+s] = true
			}
			continue
		}
		c.check(mv.Value, f.Type, path+"."+name, func(x ast.Node) { mv.Value = x })
	}
}

// leaf decodes n as a value of type t on its own, as the decoder will,
// and records the error it gives.
func (c *checker) leaf(n ast.Node, t reflect.Type, path string, set func(ast.Node)) {
	err := decodeSafely(func() error { return yaml.NodeToValue(n, reflect.New(t).Interface()) })
	if err == nil {
		return
	}
	e := decodeError(c.file, err)
	tk := n.GetToken()
	if e.Line == 0 && tk != nil {
		e.Line, e.Col = tk.Position.Line, tk.Position.Column
	}
	e.Col = c.cols.orig(e.Line, e.Col)
	if e.Hint == "" {
		e.Hint = typeHint(t, n)
	}
	c.errs = append(c.errs, e)
	c.failed[path] = true
	if set != nil && tk != nil {
		pos := *tk.Position
		set(ast.Null(token.New("null", "null", &pos)))
	}
}

// resolve looks through anchors, tags and aliases to the node that holds
// the value.
func (c *checker) resolve(n ast.Node) ast.Node {
	for range MaxDepth {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil || c.anchors[v.Value.GetToken().Value] == nil {
				return nil // the decoder reports an unknown alias
			}
			n = c.anchors[v.Value.GetToken().Value]
		default:
			return n
		}
	}
	return nil
}

// isFailed says whether the value at path, or one that holds it, was
// reported as wrong already.
func isFailed(failed map[string]bool, path string) bool {
	for p := path; p != ""; p = parentPath(p) {
		if failed[p] {
			return true
		}
	}
	return false
}

// anchorsOf maps every anchor name of f to the node it names (the last
// one, when a name is used twice).
func anchorsOf(f *ast.File) map[string]ast.Node {
	out := map[string]ast.Node{}
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		ast.Walk(anchorVisitor(out), doc.Body)
	}
	return out
}

type anchorVisitor map[string]ast.Node

func (a anchorVisitor) Visit(n ast.Node) ast.Visitor {
	if v, ok := n.(*ast.AnchorNode); ok && v.Name != nil && v.Name.GetToken() != nil {
		a[v.Name.GetToken().Value] = v.Value
	}
	return a
}

// fieldSet is the YAML names of a struct type's fields.
type fieldSet struct {
	byName map[string]reflect.StructField
	names  []string
}

var fieldSets sync.Map // reflect.Type → *fieldSet

func structFields(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{byName: map[string]reflect.StructField{}}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Struct {
			// An inlined struct's fields are the outer one's.
			in := structFields(f.Type)
			for _, n := range in.names {
				fs.byName[n] = in.byName[n]
				fs.names = append(fs.names, n)
			}
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fs.byName[name] = f
		fs.names = append(fs.names, name)
	}
	fieldSets.Store(t, fs)
	return fs
}

// typeHint says how a value of type t is written, for a value n of the
// wrong type.
func typeHint(t reflect.Type, n ast.Node) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		if _, seq := n.(*ast.SequenceNode); !seq {
			return "write a list, such as [a, b], even for one item"
		}
	case reflect.Struct, reflect.Map:
		if _, m := n.(*ast.MappingNode); !m {
			return "write a mapping, such as {name: value}"
		}
	}
	return ""
}
