package plan

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/chaoskit/chaoskit/internal/outdir"
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
	// raw is the file as written, its ${name} references blanked: the
	// shape its filled-in text must keep (see sameShape).
	raw *ast.File
	// text, ast and cols are the file after ${name} substitution.
	text []byte
	ast  *ast.File
	cols colMap
}

// readIncludes reads the files the scenario in raw (its blanked parse)
// includes. An included file may not include others, so there are no
// cycles to follow.
//
// A scenario may be someone else's file, and an error shows the line it
// points at: so an include is read only from the scenario's own directory
// tree (or a directory its include_dirs names), only when its name ends in
// .yaml or .yml, and it is parsed only when a line of it starts with a
// scenario field. Anything else is refused by its name alone, and no byte
// of it is shown.
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
	// A run directory's copy keeps its includes: the directories they came
	// from need not exist any more.
	roots, errs := includeRoots(name, raw, opts.savedIncludes == nil)
	read := opts.ReadFile
	if read == nil {
		read = readScenarioFile
	}
	read = boundedRead(read)
	var out []*included
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
		saved, isSaved := opts.savedIncludes[filepath.Clean(path)]
		switch ext := strings.ToLower(filepath.Ext(path)); {
		case opts.savedIncludes != nil && !isSaved:
			// A run directory is data: its copy names no file outside it.
			at(fmt.Sprintf("included file %s was not saved with the run: a run directory's scenario includes only the copies in %s", rel, CopyIncludeDir),
				"judge the run with --scenario FILE")
			continue
		case ext != ".yaml" && ext != ".yml":
			at(fmt.Sprintf("included file %s is not a scenario file: its name does not end in .yaml or .yml", rel), "include partial scenarios only")
			continue
		case !isSaved && !roots.hold(path):
			at(fmt.Sprintf("included file %s is outside the scenario's directory %s", rel, roots.dirs[0]),
				"keep shared files below the scenario's directory, or name their directory in include_dirs: [DIR]")
			continue
		}
		var data []byte
		var err error
		if isSaved {
			// A run directory's copy of a file that was checked when the
			// run loaded it: read from the run directory itself, and only
			// when it is still what the run saved.
			data, err = outdir.ReadFile(saved.path, MaxFile)
			if err == nil && saved.sha256 != "" && sha256Hex(data) != saved.sha256 {
				err = &CopyHashError{Path: saved.path, Got: sha256Hex(data), Want: saved.sha256}
			}
		} else {
			data, err = read(path)
		}
		if err != nil {
			hint := "include paths are relative to the including file"
			var fe *fileError
			if errors.As(err, &fe) && fe.hint != "" {
				hint = fe.hint
			}
			at(fmt.Sprintf("cannot read included file %s: %v", rel, openError(err)), hint)
			continue
		}
		if !looksLikeScenario(data) {
			at(fmt.Sprintf("included file %s is not a partial scenario: no line of it starts with a scenario field such as target: or load: (its content is not shown)", rel),
				"include partial scenarios only")
			continue
		}
		inc := &included{spec: rel, name: path, data: data}
		if e := checkSize(path, data); e != nil {
			errs = append(errs, e)
			continue
		}
		f, err := parser.ParseBytes(blankRefs(data), 0)
		if err != nil {
			errs = append(errs, decodeError(path, err))
			continue
		}
		if e := checkShape(path, f); e != nil {
			errs = append(errs, e)
			continue
		}
		bad := false
		for _, key := range []string{"include", "include_dirs"} {
			if n := topLevel(f, key); n != nil {
				t := n.GetToken()
				errs = append(errs, &Error{File: path, Line: t.Position.Line, Col: t.Position.Column,
					Msg: "an included file cannot " + map[string]string{"include": "include others", "include_dirs": "set include_dirs"}[key], Hint: "include every file from the scenario itself"})
				bad = true
			}
		}
		if bad {
			continue
		}
		if e := secondDocument(path, f); e != nil {
			errs = append(errs, e)
		}
		vars, verrs := declaredVars(path, f, data)
		errs = append(errs, verrs...)
		inc.vars = vars
		inc.raw = f
		out = append(out, inc)
	}
	return out, errs
}

// roots are the directories a scenario may include files from.
type roots struct {
	// dirs are as the user would write them (the first is the scenario's
	// own directory); real are the same with symbolic links resolved.
	dirs, real []string
}

// includeRoots returns the scenario's directory and the ones its
// include_dirs field names (relative to it), and, when check is set, the
// errors of that field.
func includeRoots(name string, raw *ast.File, check bool) (roots, ErrorList) {
	dir := filepath.Dir(name)
	var r roots
	r.add(dir)
	node := topLevel(raw, "include_dirs")
	if node == nil {
		return r, nil
	}
	seq, ok := node.(*ast.SequenceNode)
	if !ok {
		return r, nil // reported when the field is decoded
	}
	var errs ErrorList
	for _, n := range seq.Values {
		d, ok := scalar(n)
		if !ok {
			continue // reported when the field is decoded
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if st, err := os.Stat(d); check && (err != nil || !st.IsDir()) {
			tk := n.GetToken()
			errs = append(errs, &Error{File: name, Line: tk.Position.Line, Col: tk.Position.Column,
				Msg: fmt.Sprintf("include_dirs names %s, which is not a directory", d), Hint: "paths in include_dirs are relative to the scenario file"})
			continue
		}
		r.add(d)
	}
	return r, errs
}

func (r *roots) add(dir string) {
	r.dirs = append(r.dirs, dir)
	r.real = append(r.real, realPath(dir))
}

// hold says whether path is inside one of the roots, after symbolic
// links: a link inside the tree to a file outside it is outside.
func (r roots) hold(path string) bool {
	p := realPath(path)
	for _, root := range r.real {
		if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// realPath is path made absolute with its symbolic links resolved; for a
// path that does not exist (or is not on disk: an embedded file), the
// longest prefix that does is resolved and the rest kept as written.
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for p := abs; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// looksLikeScenario says whether some line of data starts with a
// top-level scenario field (name:, target:, load:, ...): a file without
// one is not a partial scenario, and its content is not for error
// messages to show.
func looksLikeScenario(data []byte) bool {
	top := structFields(reflect.TypeFor[Scenario]())
	for line := range bytes.Lines(data) {
		key, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		if _, known := top.byName[string(bytes.TrimRight(key, " \t"))]; known {
			return true
		}
	}
	return false
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
	out := bytes.Clone(data)
	for _, loc := range varRefs(data) {
		if loc[2] >= 0 {
			for i := loc[0]; i < loc[1]; i++ {
				out[i] = 'x'
			}
		}
	}
	return out
}
