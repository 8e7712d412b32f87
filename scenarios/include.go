package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Includes names the files a scenario includes: one path or a list of them,
// relative to the including file.
type Includes []string

// UnmarshalYAML implements goccy/go-yaml's NodeUnmarshaler.
func (in *Includes) UnmarshalYAML(n ast.Node) error {
	if s, ok := scalar(n); ok {
		*in = Includes{s}
		return nil
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return errAt(n, "write include: common.yaml or include: [a.yaml, b.yaml]", "include must be a path or a list of paths")
	}
	for _, v := range seq.Values {
		s, ok := scalar(v)
		if !ok {
			return errAt(v, "", "an include is a path")
		}
		*in = append(*in, s)
	}
	return nil
}

// included is one file a scenario includes: a partial scenario whose fields
// the including file may override.
type included struct {
	spec string // as the include field writes it
	name string // as errors name it
	data []byte
	vars map[string]string
	// text, ast and cols are the file after ${name} substitution.
	text []byte
	ast  *ast.File
	cols colMap
}

// readIncludes reads the files the scenario in raw (its blanked parse)
// includes. An included file may not include others, so there are no
// cycles to follow.
func readIncludes(name string, raw *ast.File, opts Options) ([]*included, ErrorList) {
	node := topLevel(raw, "include")
	if node == nil {
		return nil, nil
	}
	var paths []ast.Node
	switch n := node.(type) {
	case *ast.SequenceNode:
		paths = n.Values
	default:
		paths = []ast.Node{n}
	}
	read := opts.ReadFile
	if read == nil {
		read = readScenarioFile
	}
	read = boundedRead(read)
	var out []*included
	var errs ErrorList
	for _, p := range paths {
		rel, ok := scalar(p)
		if !ok {
			continue // reported when the include field is decoded
		}
		tk := p.GetToken()
		at := func(msg, hint string) {
			errs = append(errs, &Error{File: name, Line: tk.Position.Line, Col: tk.Position.Column, Msg: msg, Hint: hint})
		}
		path := rel
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(name), rel)
		}
		data, err := read(path)
		if err != nil {
			hint := "include paths are relative to the including file"
			var fe *fileError
			if errors.As(err, &fe) && fe.hint != "" {
				hint = fe.hint
			}
			at(fmt.Sprintf("cannot read included file %s: %v", rel, openError(err)), hint)
			continue
		}
		inc := &included{spec: rel, name: path, data: data}
		f, err := parser.ParseBytes(blankRefs(data), 0)
		if err != nil {
			errs = append(errs, decodeError(path, err))
			continue
		}
		if n := topLevel(f, "include"); n != nil {
			t := n.GetToken()
			errs = append(errs, &Error{File: path, Line: t.Position.Line, Col: t.Position.Column,
				Msg: "an included file cannot include others", Hint: "include every file from the scenario itself"})
			continue
		}
		vars, verrs := declaredVars(path, f, data)
		errs = append(errs, verrs...)
		inc.vars = vars
		out = append(out, inc)
	}
	return out, errs
}

// topLevel returns the value of a top-level key of a parsed file, or nil.
func topLevel(f *ast.File, key string) ast.Node {
	if f == nil || len(f.Docs) == 0 || f.Docs[0] == nil {
		return nil
	}
	root, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil
	}
	for _, mv := range root.Values {
		if mv.Key.String() == key {
			return mv.Value
		}
	}
	return nil
}

// blankRefs returns data with every ${name} blanked out with as many x's,
// so that a reference in flow style parses and positions stay put ($$, the
// escape of a literal $, parses as it is).
func blankRefs(data []byte) []byte {
	return varRef.ReplaceAllFunc(data, func(m []byte) []byte {
		if string(m) == "$$" {
			return m
		}
		return bytes.Repeat([]byte("x"), len(m))
	})
}
