package initscan

import (
	"go/ast"
	"go/types"
	"regexp"
	"strings"
)

// Routers' packages.
const (
	chiPkg     = "github.com/go-chi/chi"
	ginPkg     = "github.com/gin-gonic/gin"
	echoPkg    = "github.com/labstack/echo"
	gorillaPkg = "github.com/gorilla/mux"
)

// router names the router a package path belongs to, "" for none.
func router(pkg string) string {
	switch {
	case pkg == "net/http":
		return "net/http"
	case pkg == chiPkg || strings.HasPrefix(pkg, chiPkg+"/"):
		return "chi"
	case pkg == ginPkg:
		return "gin"
	case pkg == echoPkg || strings.HasPrefix(pkg, echoPkg+"/"):
		return "echo"
	case pkg == gorillaPkg:
		return "gorilla/mux"
	}
	return ""
}

var httpMethods = map[string]string{"Get": "GET", "Post": "POST", "Put": "PUT", "Delete": "DELETE", "Patch": "PATCH",
	"Head": "HEAD", "Options": "OPTIONS", "Connect": "CONNECT", "Trace": "TRACE",
	"GET": "GET", "POST": "POST", "PUT": "PUT", "DELETE": "DELETE", "PATCH": "PATCH", "HEAD": "HEAD", "OPTIONS": "OPTIONS",
	"CONNECT": "CONNECT", "TRACE": "TRACE"}

// indexRouting records, before routes are read, what changes the prefix
// or method of routes registered elsewhere: chi's Route, Group and Mount,
// and gorilla/mux's Methods.
func (s *scanner) indexRouting(fn *types.Func, call *ast.CallExpr) {
	recv := receiver(call)
	switch router(fnPkg(fn)) {
	case "net/http":
		// mux.Handle("/admin/", http.StripPrefix("/admin", inner)): the
		// inner mux's routes are below /admin, and the subtree pattern is
		// a mount, not a route.
		if fn.Name() != "Handle" || len(call.Args) != 2 {
			return
		}
		h, ok := ast.Unparen(call.Args[1]).(*ast.CallExpr)
		if !ok {
			return
		}
		if sf := s.callee(h); sf != nil && fnPkg(sf) == "net/http" && sf.Name() == "StripPrefix" && len(h.Args) == 2 {
			p, ok := s.constString(h.Args[0])
			if !ok {
				return
			}
			s.mountCalls[call] = true
			for _, obj := range s.routersIn(h.Args[1]) {
				s.prefixes[obj] = mount{router: recv, path: p}
			}
		}
	case "chi":
		switch fn.Name() {
		case "Route", "Group":
			var path string
			fnArg := call.Args[len(call.Args)-1]
			if fn.Name() == "Route" && len(call.Args) == 2 {
				p, ok := s.constString(call.Args[0])
				if !ok {
					return
				}
				path = p
			}
			if obj := s.firstParam(fnArg); obj != nil {
				s.prefixes[obj] = mount{router: recv, path: path, chi: true}
			}
		case "Mount":
			if len(call.Args) != 2 {
				return
			}
			p, ok := s.constString(call.Args[0])
			if !ok {
				return
			}
			for _, obj := range s.routersIn(call.Args[1]) {
				s.prefixes[obj] = mount{router: recv, path: p, chi: true}
			}
		}
	case "gorilla/mux":
		if fn.Name() != "Methods" || recv == nil {
			return
		}
		var ms []string
		for _, a := range call.Args {
			if m, ok := s.constString(a); ok {
				ms = append(ms, strings.ToUpper(m))
			}
		}
		// r.HandleFunc(...).Methods("GET"), possibly after other
		// calls on the route (.Name, .Queries...).
		for c, ok := ast.Unparen(recv).(*ast.CallExpr); ok; c, ok = ast.Unparen(receiver(c)).(*ast.CallExpr) {
			if f := s.callee(c); f != nil && (f.Name() == "HandleFunc" || f.Name() == "Handle") {
				s.methods[c] = ms
				return
			}
			if receiver(c) == nil {
				return
			}
		}
	}
}

// firstParam is the object of the first parameter of a function literal
// or a module function named by e.
func (s *scanner) firstParam(e ast.Expr) types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		if len(x.Type.Params.List) > 0 && len(x.Type.Params.List[0].Names) > 0 {
			return s.info.Defs[x.Type.Params.List[0].Names[0]]
		}
	case *ast.Ident, *ast.SelectorExpr:
		if fn, ok := s.objOf(x).(*types.Func); ok {
			if d := s.decls[fn]; d != nil && len(d.Type.Params.List) > 0 && len(d.Type.Params.List[0].Names) > 0 {
				return s.info.Defs[d.Type.Params.List[0].Names[0]]
			}
		}
	}
	return nil
}

// routersIn is the router variables a mounted handler expression stands
// for: a variable, or the variables a module function returns.
func (s *scanner) routersIn(e ast.Expr) []types.Object {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident, *ast.SelectorExpr:
		if obj := s.objOf(x); obj != nil {
			return []types.Object{obj}
		}
	case *ast.CallExpr:
		fn := s.callee(x)
		if fn == nil || s.decls[fn] == nil || s.decls[fn].Body == nil {
			return nil
		}
		var objs []types.Object
		ast.Inspect(s.decls[fn].Body, func(n ast.Node) bool {
			if r, ok := n.(*ast.ReturnStmt); ok && len(r.Results) > 0 {
				if obj := s.objOf(r.Results[0]); obj != nil {
					objs = append(objs, obj)
				}
			}
			return true
		})
		return objs
	}
	return nil
}

// prefix is the path a router expression's routes are below.
func (s *scanner) prefix(e ast.Expr) string {
	return s.prefixAt(e, 0)
}

func (s *scanner) prefixAt(e ast.Expr, depth int) string {
	if e == nil || depth > maxDepth {
		return ""
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		fn := s.callee(x)
		if fn == nil {
			return ""
		}
		recv := receiver(x)
		switch router(fnPkg(fn)) {
		case "gin", "echo":
			if fn.Name() == "Group" && len(x.Args) > 0 {
				p, _ := s.constString(x.Args[0])
				return joinPath(s.prefixAt(recv, depth+1), p, false)
			}
		case "gorilla/mux":
			switch fn.Name() {
			case "Subrouter":
				return s.prefixAt(recv, depth+1)
			case "PathPrefix":
				p, _ := s.constString(x.Args[0])
				return joinPath(s.prefixAt(recv, depth+1), p, false)
			}
		case "chi":
			if fn.Name() == "With" || fn.Name() == "Group" {
				return s.prefixAt(recv, depth+1)
			}
		}
		return ""
	case *ast.Ident, *ast.SelectorExpr:
		obj := s.objOf(x)
		if obj == nil || s.busy[obj] {
			return ""
		}
		s.busy[obj] = true
		defer delete(s.busy, obj)
		if m, ok := s.prefixes[obj]; ok {
			return joinPath(s.prefixAt(m.router, depth+1), m.path, m.chi)
		}
		if v, ok := obj.(*types.Var); ok {
			if arg, ok := s.bound[v]; ok {
				return s.prefixAt(arg, depth+1)
			}
			if at, ok := s.params[v]; ok {
				for _, c := range s.calls[at.fn] {
					if at.i < len(c.Args) {
						if p := s.prefixAt(c.Args[at.i], depth+1); p != "" {
							return p
						}
					}
				}
			}
		}
		for _, d := range s.defs[obj] {
			if p := s.prefixAt(d, depth+1); p != "" {
				return p
			}
		}
	}
	return ""
}

// joinPath puts a route's path below a prefix. chi's "/" below a mount
// is the mount's path itself.
func joinPath(prefix, p string, chi bool) string {
	prefix = strings.TrimSuffix(prefix, "/")
	switch {
	case prefix == "":
		return p
	case p == "" || (p == "/" && chi):
		return prefix
	case strings.HasPrefix(p, "/"):
		return prefix + p
	}
	return prefix + "/" + p
}

// route reads a route registration, nil when the call is none.
func (s *scanner) route(fn *types.Func, call *ast.CallExpr, svc *Service) *Route {
	rt := router(fnPkg(fn))
	if rt == "" || s.mountCalls[call] {
		return nil
	}
	name, recvType := fn.Name(), fnRecv(fn)
	method, pathAt := "", 0
	switch rt {
	case "net/http":
		if (name != "HandleFunc" && name != "Handle") || (recvType != "" && recvType != "ServeMux") {
			return nil
		}
	case "chi":
		switch name {
		case "Handle", "HandleFunc":
		case "Method", "MethodFunc":
			m, ok := s.constString(call.Args[0])
			if !ok {
				svc.note(s.pos(call.Pos()), "the method of this chi route is not a constant: the route is left out")
				return nil
			}
			method, pathAt = strings.ToUpper(m), 1
		default:
			if method = httpMethods[name]; method == "" {
				return nil
			}
		}
	case "gin", "echo":
		switch name {
		case "Any":
		case "Handle", "Add":
			m, ok := s.constString(call.Args[0])
			if !ok {
				return nil
			}
			method, pathAt = strings.ToUpper(m), 1
		default:
			if method = httpMethods[name]; method == "" || strings.ToUpper(name) != name {
				return nil
			}
		}
		if !routerTypes[recvType] {
			return nil
		}
	case "gorilla/mux":
		if (name != "HandleFunc" && name != "Handle") || recvType != "Router" {
			return nil
		}
		if ms := s.methods[call]; len(ms) > 0 {
			method = ms[0]
		}
	}
	if len(call.Args) <= pathAt {
		return nil
	}
	raw, ok := s.constString(call.Args[pathAt])
	if !ok {
		svc.note(s.pos(call.Pos()), "the path of this %s route is not a constant: the route is left out", rt)
		return nil
	}
	r := &Route{Method: method, Router: rt, Pos: s.pos(call.Pos())}
	if rt == "net/http" {
		m, p := splitPattern(raw)
		if m != "" {
			r.Method = m
		}
		raw = p
	}
	raw = joinPath(s.prefix(receiver(call)), raw, rt == "chi")
	r.Path, r.Params, r.Patterns = normalize(raw, rt)
	if rt == "gorilla/mux" && len(s.methods[call]) > 1 {
		for _, m := range s.methods[call][1:] {
			svc.Routes = append(svc.Routes, Route{Method: m, Path: r.Path, Params: r.Params, Patterns: r.Patterns, Router: rt, Pos: r.Pos})
		}
	}
	return r
}

// splitPattern splits a Go 1.22 ServeMux pattern "[METHOD ][HOST]/PATH"
// into its method and path; {$} (exact match) is dropped.
func splitPattern(p string) (method, path string) {
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		method, p = p[:i], strings.TrimLeft(p[i:], " \t")
	}
	if i := strings.Index(p, "/"); i > 0 {
		p = p[i:] // a host
	}
	return method, strings.TrimSuffix(p, "{$}")
}

var (
	braceParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?(?::([^{}]*(?:\{[^{}]*\}[^{}]*)*))?\}`)
	colonParam = regexp.MustCompile(`(^|/)([:*])([A-Za-z_][A-Za-z0-9_]*)?`)
)

// normalize writes a router's path parameters as {name}.
func normalize(p, rt string) (string, []string, map[string]string) {
	var params []string
	var pats map[string]string
	switch rt {
	case "gin", "echo":
		p = colonParam.ReplaceAllStringFunc(p, func(m string) string {
			sub := colonParam.FindStringSubmatch(m)
			name := sub[3]
			if name == "" {
				name = "path"
			}
			params = append(params, name)
			if sub[2] == "*" {
				return sub[1] + "{" + name + "...}"
			}
			return sub[1] + "{" + name + "}"
		})
	default:
		p = braceParam.ReplaceAllStringFunc(p, func(m string) string {
			sub := braceParam.FindStringSubmatch(m)
			params = append(params, sub[1])
			if sub[3] != "" {
				if pats == nil {
					pats = map[string]string{}
				}
				pats[sub[1]] = sub[3]
			}
			return "{" + sub[1] + sub[2] + "}"
		})
		if rt == "chi" && strings.HasSuffix(p, "/*") {
			p = strings.TrimSuffix(p, "*") + "{path...}"
			params = append(params, "path")
		}
	}
	return p, params, pats
}

// routerTypes are the gin and echo types routes are registered on.
var routerTypes = map[string]bool{"Engine": true, "RouterGroup": true, "IRoutes": true, "IRouter": true, "Echo": true, "Group": true}

// healthPath matches the paths of health routes, healthNames in the
// order init prefers them.
var (
	healthPath  = regexp.MustCompile(`(?i)/(healthz|health|readyz|ready|livez|ping)$`)
	healthNames = []string{"healthz", "health", "readyz", "ready", "livez", "ping"}
)
