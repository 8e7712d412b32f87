package plan

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Bounds on the YAML structure of one file, checked before the file is
// parsed and decoded. The YAML library's cost grows faster than the input
// for some shapes: a 60 KB file of nested brackets cost 1.5 GB and seconds
// to parse, a flow list of two million items 2 GB, and aliases multiply
// what they name (a "billion laughs" file). A real scenario is far inside
// every bound: the bundled ones hold under 100 lines, nest 6 deep and use
// no aliases.
const (
	// MaxNodes bounds the lines plus the flow items ([, {, and ,) of a
	// file, which bounds the tokens the parser makes of it.
	MaxNodes = 50_000
	// MaxDepth bounds how deeply mappings and sequences nest.
	MaxDepth = 64
	// MaxExpanded bounds the nodes of a document with every alias replaced
	// by what it names.
	MaxExpanded = 100_000
)

// checkSize refuses a file with more lines and flow items than MaxNodes,
// and a file whose flow collections nest deeper than MaxDepth, before the
// parser sees it. It is cheap: one pass over the bytes, then the lexer,
// whose cost is linear, over a file known to be small.
func checkSize(file string, data []byte) *Error {
	if len(data) > MaxFile {
		return &Error{File: file, Msg: tooLarge(int64(len(data)), MaxFile).Error()}
	}
	n, line, col := 0, 1, 0
	for _, b := range data {
		col++
		switch b {
		case '\n':
			n++
			line, col = line+1, 0
		case '[', '{', ',':
			n++
		}
		if n > MaxNodes {
			return &Error{File: file, Line: line, Col: max(col, 1),
				Msg:  fmt.Sprintf("the file holds more than %d lines and flow items ([, {, and ,), the most a scenario may", MaxNodes),
				Hint: "split it into files that include a shared part, or move large request bodies to body_file"}
		}
	}
	depth := 0
	for _, tk := range lexer.Tokenize(string(data)) {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			depth++
			if depth > MaxDepth {
				return depthError(file, tk)
			}
		case token.SequenceEndType, token.MappingEndType:
			depth--
		}
	}
	return nil
}

func depthError(file string, tk *token.Token) *Error {
	return &Error{File: file, Line: tk.Position.Line, Col: tk.Position.Column,
		Msg:  fmt.Sprintf("mappings and lists nest more than %d deep here, deeper than a scenario may", MaxDepth),
		Hint: "a scenario nests a few levels deep; check the brackets and the indentation"}
}

// checkShape refuses a parsed file that nests deeper than MaxDepth (block
// style, which the lexer does not see as nesting) or whose aliases expand it
// beyond MaxExpanded nodes. An alias is counted as the size of what it
// names, computed once per anchor, so the check is linear in the file.
func checkShape(file string, f *ast.File) *Error {
	s := shape{file: file, anchors: map[string]int{}}
	for _, doc := range f.Docs {
		if doc == nil {
			continue
		}
		s.size(doc.Body, 0)
		if s.err != nil {
			return s.err
		}
	}
	return nil
}

type shape struct {
	file    string
	anchors map[string]int
	total   int
	err     *Error
}

// size returns the number of nodes under n with aliases expanded; depth is
// the number of collections n is inside. It stops at the first bound
// crossed, recorded in s.err.
func (s *shape) size(n ast.Node, depth int) int {
	if n == nil || s.err != nil {
		return 0
	}
	tk := n.GetToken()
	count := func(k int) int {
		s.total += k
		if s.total > MaxExpanded && s.err == nil {
			s.err = &Error{File: s.file, Msg: fmt.Sprintf("with its aliases expanded the file holds more than %d values, more than a scenario may", MaxExpanded),
				Hint: "an alias (*name) repeats all that its anchor (&name) holds; use fewer aliases, or aliases of smaller parts"}
			if tk != nil {
				s.err.Line, s.err.Col = tk.Position.Line, tk.Position.Column
			}
		}
		return k
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode:
		if depth++; depth > MaxDepth {
			s.err = depthError(s.file, tk)
			return 0
		}
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		k := 1
		for _, mv := range v.Values {
			k += s.size(mv.Key, depth) + s.size(mv.Value, depth)
		}
		return k
	case *ast.MappingValueNode:
		// A mapping of one key, as the parser makes it.
		return 1 + s.size(v.Key, depth) + s.size(v.Value, depth)
	case *ast.SequenceNode:
		k := 1
		for _, e := range v.Values {
			k += s.size(e, depth)
		}
		return k
	case *ast.MappingKeyNode:
		return s.size(v.Value, depth)
	case *ast.TagNode:
		return s.size(v.Value, depth)
	case *ast.AnchorNode:
		k := s.size(v.Value, depth)
		if v.Name != nil && v.Name.GetToken() != nil {
			s.anchors[v.Name.GetToken().Value] = k
		}
		return k
	case *ast.AliasNode:
		// What the alias names was counted once where its anchor stands;
		// each alias counts it again, as a decoder expanding it would.
		if v.Value == nil || v.Value.GetToken() == nil {
			return count(1)
		}
		return count(s.anchors[v.Value.GetToken().Value])
	}
	return count(1)
}
