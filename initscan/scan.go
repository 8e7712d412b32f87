package initscan

import (
	"context"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/chaoskit/chaoskit/inject"
)

// Scan reads the package pattern (one package, as go list takes it; "."
// when empty) in the module at dir, with every package of the same module
// it imports, and returns what it found. Only the source is read: the
// service is neither built nor run (go list compiles the export data of
// the packages it imports from other modules, as go vet does).
func Scan(ctx context.Context, dir, pattern string) (*Service, error) {
	if pattern == "" {
		pattern = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// First the import graph, cheaply, to find the packages of the
	// service's own module; then those, with syntax and types.
	graph, err := packages.Load(&packages.Config{Context: ctx, Dir: abs, Mode: packages.NeedName | packages.NeedModule | packages.NeedImports | packages.NeedDeps}, pattern)
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", pattern, err)
	}
	if len(graph) != 1 {
		return nil, fmt.Errorf("%s names %d packages: give init one package, the service's main package", pattern, len(graph))
	}
	root := graph[0]
	if len(root.Errors) > 0 {
		return nil, fmt.Errorf("package %s: %v", pattern, root.Errors[0])
	}
	if root.Module == nil {
		return nil, fmt.Errorf("package %s is not in a module: init reads services with a go.mod", root.PkgPath)
	}
	mod := root.Module
	var local []string
	packages.Visit([]*packages.Package{root}, nil, func(p *packages.Package) {
		if ownCode(p.Module, mod) {
			local = append(local, p.PkgPath)
		}
	})
	sort.Strings(local)
	pkgs, err := packages.Load(&packages.Config{Context: ctx, Dir: abs, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax |
		packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports | packages.NeedModule}, local...)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", mod.Path, err)
	}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			if ownCode(p.Module, mod) {
				errs = append(errs, e.Error())
			}
		}
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("the service does not type-check, init reads only code that builds: %s", strings.Join(errs, "; "))
	}
	s := newScanner(mod.Dir, root.PkgPath, pkgs)
	svc := &Service{Dir: mod.Dir, Module: mod.Path, Package: root.PkgPath, Name: lastElem(root.PkgPath), Main: root.Name == "main"}
	if root.PkgPath == mod.Path && root.Name == "main" {
		svc.Name = lastElem(mod.Path)
	}
	s.index()
	s.scanCalls(svc)
	for _, p := range s.pkgs {
		for _, f := range p.GoFiles {
			pts, err := inject.ScanFile(f, p.PkgPath)
			if err != nil {
				return nil, err
			}
			for i := range pts {
				pts[i].File = s.rel(pts[i].File)
			}
			svc.Points = append(svc.Points, pts...)
		}
	}
	svc.finish(s)
	return svc, nil
}

func lastElem(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// scanner holds the loaded packages' syntax and one merged types.Info
// (its maps are keyed by syntax nodes, which no two packages share).
type scanner struct {
	dir, root string
	fset      *token.FileSet
	pkgs      []*packages.Package
	info      *types.Info
	// files maps each file's syntax to its package.
	files map[*ast.File]*packages.Package

	// defs holds, per variable or struct field, the expressions assigned
	// to it anywhere; flags the flags and variables that hold a flag's
	// value; decls each function's declaration; params where each
	// parameter sits; calls every call of each function of the module.
	defs   map[types.Object][]ast.Expr
	flags  map[types.Object]*Origin
	decls  map[*types.Func]*ast.FuncDecl
	params map[*types.Var]paramAt
	calls  map[*types.Func][]*ast.CallExpr
	// methods maps a gorilla/mux HandleFunc call to the methods a
	// .Methods(...) chained on it names.
	methods map[*ast.CallExpr][]string
	// prefixes maps a router variable to the router and path it was
	// mounted at (chi Route, Group, Mount).
	prefixes map[types.Object]mount
	// mountCalls are the net/http registrations that mount another mux.
	mountCalls map[*ast.CallExpr]bool
	// bound holds the arguments of the calls whose bodies are being read.
	bound map[*types.Var]ast.Expr
	// busy guards against cycles while tracing.
	busy map[any]bool
}

type paramAt struct {
	fn *types.Func
	i  int
}

type mount struct {
	router ast.Expr // nil: the path alone
	path   string
	chi    bool
}

func newScanner(dir, root string, pkgs []*packages.Package) *scanner {
	s := &scanner{dir: dir, root: root, pkgs: pkgs,
		info: &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{},
			Selections: map[*ast.SelectorExpr]*types.Selection{}},
		files: map[*ast.File]*packages.Package{}, defs: map[types.Object][]ast.Expr{}, flags: map[types.Object]*Origin{},
		decls: map[*types.Func]*ast.FuncDecl{}, params: map[*types.Var]paramAt{}, calls: map[*types.Func][]*ast.CallExpr{},
		methods: map[*ast.CallExpr][]string{}, prefixes: map[types.Object]mount{}, mountCalls: map[*ast.CallExpr]bool{}, bound: map[*types.Var]ast.Expr{}, busy: map[any]bool{}}
	for _, p := range pkgs {
		if s.fset == nil {
			s.fset = p.Fset
		}
		for k, v := range p.TypesInfo.Types {
			s.info.Types[k] = v
		}
		for k, v := range p.TypesInfo.Defs {
			s.info.Defs[k] = v
		}
		for k, v := range p.TypesInfo.Uses {
			s.info.Uses[k] = v
		}
		for k, v := range p.TypesInfo.Selections {
			s.info.Selections[k] = v
		}
		for _, f := range p.Syntax {
			s.files[f] = p
		}
	}
	return s
}

func (s *scanner) pos(p token.Pos) Pos {
	if !p.IsValid() {
		return Pos{}
	}
	at := s.fset.Position(p)
	return Pos{File: s.rel(at.Filename), Line: at.Line}
}

func (s *scanner) rel(file string) string {
	if r, err := filepath.Rel(s.dir, file); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return file
}

// eachFile walks the files in a stable order.
func (s *scanner) eachFile(fn func(*packages.Package, *ast.File)) {
	for _, p := range s.pkgs {
		for _, f := range p.Syntax {
			fn(p, f)
		}
	}
}

// index records assignments, declarations, parameters and calls.
func (s *scanner) index() {
	s.eachFile(func(_ *packages.Package, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				if fn, ok := s.info.Defs[x.Name].(*types.Func); ok {
					s.decls[fn] = x
					i := 0
					for _, fld := range x.Type.Params.List {
						for _, name := range fld.Names {
							if v, ok := s.info.Defs[name].(*types.Var); ok {
								s.params[v] = paramAt{fn, i}
							}
							i++
						}
						if len(fld.Names) == 0 {
							i++
						}
					}
				}
			case *ast.AssignStmt:
				if len(x.Lhs) == len(x.Rhs) {
					for i, l := range x.Lhs {
						if obj := s.objOf(l); obj != nil {
							s.defs[obj] = append(s.defs[obj], x.Rhs[i])
						}
					}
				} else if len(x.Rhs) == 1 {
					// a, err := f(): a takes f's first result.
					if obj := s.objOf(x.Lhs[0]); obj != nil {
						s.defs[obj] = append(s.defs[obj], x.Rhs[0])
					}
				}
			case *ast.ValueSpec:
				for i, name := range x.Names {
					obj := s.info.Defs[name]
					if obj == nil {
						continue
					}
					if len(x.Values) == len(x.Names) {
						s.defs[obj] = append(s.defs[obj], x.Values[i])
					} else if len(x.Values) == 1 && i == 0 {
						s.defs[obj] = append(s.defs[obj], x.Values[0])
					}
				}
			case *ast.CompositeLit:
				st, ok := under(s.info.Types[x].Type).(*types.Struct)
				if !ok {
					return true
				}
				for i, el := range x.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok {
							for j := range st.NumFields() {
								if st.Field(j).Name() == key.Name {
									s.defs[st.Field(j).Origin()] = append(s.defs[st.Field(j).Origin()], kv.Value)
								}
							}
						}
					} else if i < st.NumFields() {
						s.defs[st.Field(i).Origin()] = append(s.defs[st.Field(i).Origin()], el)
					}
				}
			case *ast.CallExpr:
				fn := s.callee(x)
				if fn == nil {
					return true
				}
				s.calls[fn] = append(s.calls[fn], x)
				s.indexFlag(fn, x)
			}
			return true
		})
	})
	// Routing reads declarations that may come later in the source.
	s.eachFile(func(_ *packages.Package, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if fn := s.callee(call); fn != nil {
					s.indexRouting(fn, call)
				}
			}
			return true
		})
	})
}

func under(t types.Type) types.Type {
	if t == nil {
		return nil
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		return p.Elem().Underlying()
	}
	return t.Underlying()
}

// objOf is the variable or field an expression names.
func (s *scanner) objOf(e ast.Expr) types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		if o := s.info.Defs[x]; o != nil {
			return o
		}
		return s.info.Uses[x]
	case *ast.SelectorExpr:
		if sel := s.info.Selections[x]; sel != nil {
			if v, ok := sel.Obj().(*types.Var); ok {
				return v.Origin()
			}
			return nil
		}
		return s.info.Uses[x.Sel]
	case *ast.StarExpr:
		return s.objOf(x.X)
	case *ast.UnaryExpr:
		if x.Op == token.AND {
			return s.objOf(x.X)
		}
	}
	return nil
}

// callee is the function or method a call calls, nil for a conversion
// or a call of a function value.
func (s *scanner) callee(call *ast.CallExpr) *types.Func {
	fun := ast.Unparen(call.Fun)
	if ix, ok := fun.(*ast.IndexExpr); ok {
		fun = ix.X
	}
	var obj types.Object
	switch f := fun.(type) {
	case *ast.Ident:
		obj = s.info.Uses[f]
	case *ast.SelectorExpr:
		obj = s.info.Uses[f.Sel]
	}
	fn, _ := obj.(*types.Func)
	if fn == nil {
		return nil
	}
	return fn.Origin()
}

// fnPkg and fnRecv say where a function is declared: its package's path
// and its receiver's type name ("" for a plain function).
func fnPkg(fn *types.Func) string {
	if fn.Pkg() == nil {
		return ""
	}
	return fn.Pkg().Path()
}

func fnRecv(fn *types.Func) string {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return ""
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// receiver is the expression a method call is made on.
func receiver(call *ast.CallExpr) ast.Expr {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
		return sel.X
	}
	return nil
}

// constString is the string constant e is, also through the parameters
// of the calls being traced; ok false when it is not one.
func (s *scanner) constString(e ast.Expr) (string, bool) {
	e = ast.Unparen(e)
	if tv, ok := s.info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return constant.StringVal(tv.Value), true
	}
	if id, ok := e.(*ast.Ident); ok {
		if v, ok := s.info.Uses[id].(*types.Var); ok {
			if arg, ok := s.bound[v]; ok {
				return s.unbound(v, func() (string, bool) { return s.constString(arg) })
			}
		}
	}
	return "", false
}

// unbound runs fn with v's binding lifted, so that an argument is read
// in its caller's terms.
func (s *scanner) unbound(v *types.Var, fn func() (string, bool)) (string, bool) {
	arg := s.bound[v]
	delete(s.bound, v)
	defer func() { s.bound[v] = arg }()
	return fn()
}

func isFlagPkg(p string) bool { return p == "flag" || p == "github.com/spf13/pflag" }

// flagArgs says, for a flag-defining function of package flag or pflag,
// where its name and default are (-1: not a flag definition) and where
// the pointer it fills is (-1: it returns one).
func flagArgs(name string) (nameAt, defAt, ptrAt int) {
	if strings.HasSuffix(name, "Var") || strings.HasSuffix(name, "VarP") {
		base := strings.TrimSuffix(strings.TrimSuffix(name, "P"), "Var")
		if !flagKinds[base] {
			return -1, -1, -1
		}
		if strings.HasSuffix(name, "P") {
			return 1, 3, 0
		}
		return 1, 2, 0
	}
	base := strings.TrimSuffix(name, "P")
	if !flagKinds[base] {
		return -1, -1, -1
	}
	if strings.HasSuffix(name, "P") && base != name {
		return 0, 2, -1
	}
	return 0, 1, -1
}

var flagKinds = map[string]bool{"String": true, "Int": true, "Int64": true, "Uint": true, "Uint64": true, "Bool": true,
	"Duration": true, "Float64": true, "Int32": true, "Uint32": true, "Uint16": true, "StringSlice": true, "StringArray": true, "IP": true}

// indexFlag records a flag definition's variable.
func (s *scanner) indexFlag(fn *types.Func, call *ast.CallExpr) {
	if !isFlagPkg(fnPkg(fn)) {
		return
	}
	nameAt, defAt, ptrAt := flagArgs(fn.Name())
	if nameAt < 0 || ptrAt < 0 || len(call.Args) <= defAt {
		return
	}
	o := s.flagOrigin(call, nameAt, defAt)
	if obj := s.objOf(call.Args[ptrAt]); obj != nil && o != nil {
		s.flags[obj] = o
	}
}

func (s *scanner) flagOrigin(call *ast.CallExpr, nameAt, defAt int) *Origin {
	name, ok := s.constString(call.Args[nameAt])
	if !ok {
		return nil
	}
	o := &Origin{Kind: "flag", Name: name, Pos: s.pos(call.Pos())}
	if tv, ok := s.info.Types[ast.Unparen(call.Args[defAt])]; ok && tv.Value != nil {
		if tv.Value.Kind() == constant.String {
			o.Value = constant.StringVal(tv.Value)
		} else {
			o.Value = tv.Value.ExactString()
		}
	}
	return o
}

// injectModule is the module of chaoskit's fault points, which a service
// imports and a service beside chaoskit's source replaces with a directory.
const injectModule = "github.com/chaoskit/chaoskit/inject"

// ownCode says whether a package of module m is the service's own code:
// its module, or a module its go.mod replaces with a directory (a library
// kept beside the service, as breakerimpl is beside the demo), whose
// routes and calls the service serves as its own. A module from the
// module cache is someone else's and is not read.
func ownCode(m, service *packages.Module) bool {
	if m == nil {
		return false
	}
	if m.Path == service.Path {
		return true
	}
	if m.Path == injectModule {
		return false // chaoskit's control of fault points, not the service's code
	}
	r := m.Replace
	return r != nil && r.Version == "" && (filepath.IsAbs(r.Path) || strings.HasPrefix(r.Path, "./") || strings.HasPrefix(r.Path, "../"))
}

// inModule says whether obj is declared in one of the loaded packages.
func (s *scanner) inModule(obj types.Object) bool {
	if obj.Pkg() == nil {
		return false
	}
	for _, p := range s.pkgs {
		if p.Types == obj.Pkg() {
			return true
		}
	}
	return false
}

// rank orders origins: a flag before an env var before a literal.
func rank(o *Origin) int {
	switch {
	case o == nil:
		return 0
	case o.Kind == "flag":
		return 3
	case o.Kind == "env":
		return 2
	}
	return 1
}

func best(os ...*Origin) *Origin {
	var b *Origin
	for _, o := range os {
		if rank(o) > rank(b) {
			b = o
		}
	}
	return b
}

const maxDepth = 24

// origin traces where the value of e comes from: a flag, an environment
// variable or a literal; nil when it cannot tell.
func (s *scanner) origin(e ast.Expr) *Origin {
	return s.originAt(e, 0)
}

func (s *scanner) originAt(e ast.Expr, depth int) *Origin {
	if e == nil || depth > maxDepth {
		return nil
	}
	e = ast.Unparen(e)
	if tv, ok := s.info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return &Origin{Kind: "literal", Value: constant.StringVal(tv.Value), Pos: s.pos(e.Pos())}
	}
	switch x := e.(type) {
	case *ast.StarExpr:
		return s.originAt(x.X, depth+1)
	case *ast.UnaryExpr:
		if x.Op == token.AND {
			return s.originAt(x.X, depth+1)
		}
	case *ast.Ident, *ast.SelectorExpr:
		if sel, ok := x.(*ast.SelectorExpr); ok {
			if m := s.info.Selections[sel]; m != nil && m.Kind() != types.FieldVal {
				return nil
			}
		}
		if obj := s.objOf(x); obj != nil {
			if v, ok := obj.(*types.Var); ok && v.IsField() && len(s.defs[v]) == 0 && s.flags[v] == nil && s.inModule(v) {
				// A field of the service's own types that nothing sets:
				// the code reading it is not in use here.
				return &Origin{Kind: "unset", Pos: s.pos(x.Pos())}
			}
			return s.objOrigin(obj, depth+1)
		}
	case *ast.CallExpr:
		return s.callOrigin(x, depth+1)
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, b := s.originAt(x.X, depth+1), s.originAt(x.Y, depth+1)
			for _, o := range []*Origin{a, b} {
				if o != nil && o.Kind == "unset" {
					return o
				}
			}
			if o := best(a, b); o.Configurable() || (a != nil && b != nil) {
				return o
			}
			// Part of it is known, part is made at run time: say where
			// the deepest part init could not follow is.
			for _, o := range []*Origin{a, b} {
				if o != nil && o.Kind == "computed" {
					return o
				}
			}
			return &Origin{Kind: "computed", Pos: s.pos(x.Pos())}
		}
	}
	return nil
}

func (s *scanner) objOrigin(obj types.Object, depth int) *Origin {
	if o := s.flags[obj]; o != nil {
		return o
	}
	if v, ok := obj.(*types.Var); ok {
		if arg, ok := s.bound[v]; ok {
			var o *Origin
			s.unbound(v, func() (string, bool) { o = s.originAt(arg, depth+1); return "", false })
			return o
		}
	}
	if s.busy[obj] {
		return nil
	}
	s.busy[obj] = true
	defer delete(s.busy, obj)
	var found []*Origin
	for _, d := range s.defs[obj] {
		found = append(found, s.originAt(d, depth+1))
	}
	if v, ok := obj.(*types.Var); ok {
		if at, ok := s.params[v]; ok {
			for _, c := range s.calls[at.fn] {
				if at.i < len(c.Args) {
					found = append(found, s.originAt(c.Args[at.i], depth+1))
				}
			}
		}
	}
	return best(found...)
}

func (s *scanner) callOrigin(call *ast.CallExpr, depth int) *Origin {
	if tv, ok := s.info.Types[ast.Unparen(call.Fun)]; ok && tv.IsType() && len(call.Args) == 1 {
		return s.originAt(call.Args[0], depth) // a conversion
	}
	fn := s.callee(call)
	if fn == nil {
		return nil
	}
	pkg, name := fnPkg(fn), fn.Name()
	switch {
	case isFlagPkg(pkg):
		if nameAt, defAt, ptrAt := flagArgs(name); nameAt >= 0 && ptrAt < 0 && len(call.Args) > defAt {
			return s.flagOrigin(call, nameAt, defAt)
		}
		return nil
	case pkg == "os" && (name == "Getenv" || name == "LookupEnv") && len(call.Args) == 1:
		if n, ok := s.constString(call.Args[0]); ok {
			return &Origin{Kind: "env", Name: n, Pos: s.pos(call.Pos())}
		}
		return nil
	case pkg == "fmt" || pkg == "strings" || pkg == "cmp" || pkg == "net" || pkg == "path" || pkg == "path/filepath" || pkg == "net/url" || pkg == "strconv":
		var found []*Origin
		for _, a := range call.Args {
			found = append(found, s.originAt(a, depth))
		}
		if r := receiver(call); r != nil && fnRecv(fn) != "" && pkg == "net/url" {
			found = append(found, s.originAt(r, depth))
		}
		return best(found...)
	}
	return s.returned(fn, call, depth, func(e ast.Expr) *Origin { return s.originAt(e, depth) })
}

// returned reads what a module function called by call returns, with its
// parameters bound to the call's arguments: trace is applied to each
// returned first result.
func (s *scanner) returned(fn *types.Func, call *ast.CallExpr, depth int, trace func(ast.Expr) *Origin) *Origin {
	d := s.decls[fn]
	if d == nil || d.Body == nil || s.busy[d] || depth > maxDepth {
		return nil
	}
	s.busy[d] = true
	defer delete(s.busy, d)
	var set []*types.Var
	for v, at := range s.params {
		if at.fn == fn && at.i < len(call.Args) {
			if _, already := s.bound[v]; !already {
				s.bound[v] = call.Args[at.i]
				set = append(set, v)
			}
		}
	}
	defer func() {
		for _, v := range set {
			delete(s.bound, v)
		}
	}()
	var found []*Origin
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > 0 {
			found = append(found, trace(r.Results[0]))
		}
		return true
	})
	return best(found...)
}

// sortRoutes orders routes by path, then method.
func sortRoutes(rs []Route) {
	slices.SortStableFunc(rs, func(a, b Route) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
}
