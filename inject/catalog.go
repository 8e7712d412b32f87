package inject

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// FailpointImport is the import path of pingcap/failpoint.
const FailpointImport = "github.com/pingcap/failpoint"

// Point is one failpoint marker found in source.
type Point struct {
	// Path is the full failpoint path: package import path + "/" + name.
	Path string `json:"path"`
	// Package is the import path of the package holding the marker.
	Package string `json:"package"`
	// Name is the marker's name as written in the source.
	Name string `json:"name"`
	// File and Line locate the marker.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Marker is the function that names the point (Inject, InjectContext,
	// ..., or inject's NewSwitch).
	Marker string `json:"marker,omitempty"`
}

// Catalog is the set of failpoints a service really has.
type Catalog struct {
	Points []Point
}

// markerFuncs are the failpoint functions whose first argument names a
// failpoint.
var markerFuncs = map[string]bool{
	"Inject": true, "InjectContext": true, "InjectCall": true,
}

// injectImport is this package's import path: a NewSwitch call names a
// fault point as a marker does.
const injectImport = "github.com/chaoskit/chaoskit/inject"

// switchFunc is the function of this package whose first argument names a
// fault point.
const switchFunc = "NewSwitch"

// ScanSource scans the Go packages matched by patterns (as `go list` takes
// them, e.g. "./..."), run from dir, for failpoint markers. Test files are
// not scanned: their markers do not exist in the service.
func ScanSource(ctx context.Context, dir string, patterns ...string) (*Catalog, error) {
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	args := append([]string{"list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v: %s", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	type listed struct {
		ImportPath string
		Dir        string
		GoFiles    []string
		CgoFiles   []string
		Error      *struct{ Err string }
	}
	cat := &Catalog{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Error != nil && len(p.GoFiles) == 0 {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		for _, f := range append(p.GoFiles, p.CgoFiles...) {
			pts, err := ScanFile(filepath.Join(p.Dir, f), p.ImportPath)
			if err != nil {
				return nil, err
			}
			cat.Points = append(cat.Points, pts...)
		}
	}
	cat.sort()
	return cat, nil
}

// ScanFile returns the failpoint markers in one Go file of the package with
// import path pkg.
func ScanFile(filename, pkg string) ([]Point, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	return scanAST(fset, f, pkg), nil
}

func scanAST(fset *token.FileSet, f *ast.File, pkg string) []Point {
	// local and localInject are the names the file gives pingcap/failpoint
	// (whose markers name fault points) and this package (whose NewSwitch
	// does).
	local, localInject := "", ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := ""
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch {
		case p == FailpointImport && name != "":
			local = name
		case p == FailpointImport:
			local = "failpoint"
		case p == injectImport && name != "":
			localInject = name
		case p == injectImport:
			localInject = "inject"
		}
	}
	if local == "_" || local == "." {
		local = ""
	}
	if localInject == "_" || localInject == "." {
		localInject = ""
	}
	if local == "" && localInject == "" {
		return nil
	}
	// Constants declared in the file let markers name failpoints by constant.
	consts := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	var out []Point
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch {
		case local != "" && id.Name == local && markerFuncs[sel.Sel.Name]:
		case localInject != "" && id.Name == localInject && sel.Sel.Name == switchFunc:
		default:
			return true
		}
		arg := call.Args[0]
		if sel.Sel.Name == "InjectContext" && len(call.Args) > 1 {
			arg = call.Args[1]
		}
		var name string
		switch a := arg.(type) {
		case *ast.BasicLit:
			name, _ = strconv.Unquote(a.Value)
		case *ast.Ident:
			name = consts[a.Name]
		}
		if name == "" {
			return true
		}
		pos := fset.Position(call.Pos())
		out = append(out, Point{Path: pkg + "/" + name, Package: pkg, Name: name, File: pos.Filename, Line: pos.Line, Marker: sel.Sel.Name})
		return true
	})
	return out
}

// NewCatalog returns a catalog of the given full failpoint paths.
func NewCatalog(paths ...string) *Catalog {
	c := &Catalog{}
	for _, p := range paths {
		i := strings.LastIndex(p, "/")
		c.Points = append(c.Points, Point{Path: p, Package: p[:max(i, 0)], Name: p[i+1:]})
	}
	c.sort()
	return c
}

func (c *Catalog) sort() {
	sort.Slice(c.Points, func(i, j int) bool {
		if c.Points[i].Path != c.Points[j].Path {
			return c.Points[i].Path < c.Points[j].Path
		}
		return c.Points[i].Line < c.Points[j].Line
	})
}

// Paths returns the distinct failpoint paths, sorted.
func (c *Catalog) Paths() []string {
	var out []string
	for _, p := range c.Points {
		if len(out) == 0 || out[len(out)-1] != p.Path {
			out = append(out, p.Path)
		}
	}
	return out
}

// ErrUnknownPoint and ErrAmbiguousPoint are what Resolve fails with.
var (
	ErrUnknownPoint   = errors.New("unknown failpoint")
	ErrAmbiguousPoint = errors.New("ambiguous failpoint")
)

// ResolveError says why a name did not resolve and which real failpoints
// are nearest.
type ResolveError struct {
	Name       string
	Err        error // ErrUnknownPoint or ErrAmbiguousPoint
	Candidates []string
}

func (e *ResolveError) Error() string {
	if errors.Is(e.Err, ErrAmbiguousPoint) {
		return fmt.Sprintf("failpoint %q is ambiguous: it matches %s; write more of the path", e.Name, strings.Join(e.Candidates, ", "))
	}
	msg := fmt.Sprintf("unknown failpoint %q", e.Name)
	if len(e.Candidates) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", quoteJoin(e.Candidates))
	}
	return msg
}

func (e *ResolveError) Unwrap() error { return e.Err }

func quoteJoin(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, " or ")
}

// Resolve finds the failpoint a scenario names: its full path, or any
// suffix of it that starts at a path element ("productQuery",
// "store/productQuery") and matches exactly one failpoint.
func (c *Catalog) Resolve(name string) (string, error) {
	name = strings.Trim(name, "/")
	var matches []string
	for _, p := range c.Paths() {
		if p == name {
			return p, nil
		}
		if strings.HasSuffix(p, "/"+name) {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", &ResolveError{Name: name, Err: ErrUnknownPoint, Candidates: c.nearest(name)}
	default:
		return "", &ResolveError{Name: name, Err: ErrAmbiguousPoint, Candidates: matches}
	}
}

// nearest returns the shortest unambiguous spellings of the failpoints
// closest to name by edit distance over the same number of path elements.
func (c *Catalog) nearest(name string) []string {
	depth := strings.Count(name, "/") + 1
	type cand struct {
		s string
		d int
	}
	var cands []cand
	for _, p := range c.Paths() {
		parts := strings.Split(p, "/")
		if depth > len(parts) {
			depth = len(parts)
		}
		suffix := strings.Join(parts[len(parts)-depth:], "/")
		d := Distance(strings.ToLower(name), strings.ToLower(suffix))
		if d <= max(2, len(name)/3) {
			cands = append(cands, cand{suffix, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	var out []string
	for i, cd := range cands {
		if i == 3 || cd.d > cands[0].d+1 {
			break
		}
		out = append(out, cd.s)
	}
	return out
}

// Distance is the Levenshtein edit distance between a and b.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
