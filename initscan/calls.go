package initscan

import (
	"fmt"
	"go/ast"
	"go/types"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

type listenAt struct {
	Listen
	main bool
}

// scanCalls reads every call of the service's packages: routes,
// dependencies, listeners and resilience calls.
func (s *scanner) scanCalls(svc *Service) {
	var listens []listenAt
	s.eachFile(func(p *packages.Package, f *ast.File) {
		lib := resilienceLib(p.PkgPath)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := s.callee(call)
			if fn == nil {
				return true
			}
			if r := s.route(fn, call, svc); r != nil {
				svc.Routes = append(svc.Routes, *r)
			}
			if d := s.dependency(fn, call); d != nil {
				svc.Deps = append(svc.Deps, *d)
			}
			if l := s.listen(fn, call); l != nil {
				listens = append(listens, listenAt{*l, p.PkgPath == s.root})
			}
			if !lib && resilienceLib(fnPkg(fn)) && resilienceCall(fn) {
				svc.Resilience = append(svc.Resilience, Call{Package: fnPkg(fn), Func: funcName(fn), Pos: s.pos(call.Pos())})
			}
			return true
		})
	})
	// The listener: in the scanned package first, then one whose address
	// the service takes from outside.
	slices.SortStableFunc(listens, func(a, b listenAt) int {
		ra, rb := rank(a.Origin), rank(b.Origin)
		if a.main {
			ra += 10
		}
		if b.main {
			rb += 10
		}
		return rb - ra
	})
	if len(listens) > 0 {
		l := listens[0].Listen
		svc.Listen = &l
	}
}

func funcName(fn *types.Func) string {
	if r := fnRecv(fn); r != "" {
		return r + "." + fn.Name()
	}
	return lastElem(fnPkg(fn)) + "." + fn.Name()
}

// resilienceLib says whether a package is breakerimpl or one of its peers.
func resilienceLib(pkg string) bool {
	for _, p := range []string{"github.com/chaoskit/chaoskit/breakerimpl", "github.com/sony/gobreaker", "github.com/afex/hystrix-go",
		"github.com/failsafe-go/failsafe-go", "github.com/zeromicro/go-zero/core/breaker", "github.com/zeromicro/go-zero/core/load",
		"github.com/eapache/go-resiliency"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// resilienceCall says whether a call sets a policy up or runs a call
// through one (the constructors, hystrix's Do and Go, failsafe's With).
func resilienceCall(fn *types.Func) bool {
	n := fn.Name()
	return (strings.HasPrefix(n, "New") && fnRecv(fn) == "") || n == "Do" && strings.Contains(fnPkg(fn), "hystrix") ||
		n == "Go" && strings.Contains(fnPkg(fn), "hystrix") || n == "ConfigureCommand" || n == "With" && strings.Contains(fnPkg(fn), "failsafe")
}

// sqlKinds maps database/sql driver names to the database they reach.
var sqlKinds = map[string]string{"postgres": Postgres, "pgx": Postgres, "pgx/v5": Postgres, "cloudsqlpostgres": Postgres,
	"mysql": MySQL, "sqlite": SQLite, "sqlite3": SQLite}

// dependency reads a call that connects to something, nil when it is none.
func (s *scanner) dependency(fn *types.Func, call *ast.CallExpr) *Dependency {
	pkg, name, args := fnPkg(fn), fn.Name(), call.Args
	at := func(i int) ast.Expr {
		if i < len(args) {
			return args[i]
		}
		return nil
	}
	d := &Dependency{Pos: s.pos(call.Pos())}
	switch {
	case pkg == "database/sql" && name == "Open" && len(args) == 2:
		d.Client, d.Form = "database/sql", "dsn"
		drv, _ := s.constString(args[0])
		d.Driver = drv
		if d.Kind = sqlKinds[drv]; d.Kind == "" {
			d.Kind = SQL
		}
		if d.Kind == SQLite {
			d.Form = "path"
		}
		d.Origin = s.origin(args[1])
	case strings.HasPrefix(pkg, "github.com/jackc/pgx") && (name == "Connect" || name == "New" || name == "ParseConfig") && fnRecv(fn) == "":
		d.Kind, d.Client, d.Form = Postgres, "pgx", "dsn"
		d.Origin = s.origin(at(len(args) - 1))
		if name == "ParseConfig" {
			d.Origin = s.origin(at(0))
		}
	case pkg == "github.com/lib/pq" && (name == "NewConnector" || name == "Open"):
		d.Kind, d.Client, d.Form, d.Origin = Postgres, "lib/pq", "dsn", s.origin(at(0))
	case isRedis(pkg) && fnRecv(fn) == "":
		d.Kind, d.Client = Redis, "go-redis"
		switch name {
		case "NewClient", "NewFailoverClient", "NewUniversalClient", "NewClusterClient", "NewRing":
			d.Form = "addr"
			d.Origin = s.redisAddr(at(0), 0)
		case "ParseURL":
			d.Form, d.Origin = "url", s.origin(at(0))
		default:
			return nil
		}
	case pkg == "google.golang.org/grpc" && (name == "NewClient" || name == "Dial" || name == "DialContext"):
		d.Kind, d.Client, d.Form = GRPC, "grpc", "addr"
		if name == "DialContext" {
			d.Origin = s.origin(at(1))
		} else {
			d.Origin = s.origin(at(0))
		}
	case pkg == "net/http" && fnRecv(fn) == "" && (name == "Get" || name == "Post" || name == "Head" || name == "PostForm" ||
		name == "NewRequest" || name == "NewRequestWithContext"):
		d.Kind, d.Client, d.Form = HTTP, "net/http", "url"
		switch name {
		case "NewRequest":
			d.Origin = s.origin(at(1))
		case "NewRequestWithContext":
			d.Origin = s.origin(at(2))
		default:
			d.Origin = s.origin(at(0))
		}
	default:
		return nil
	}
	if d.Origin != nil && d.Origin.Kind == "unset" {
		return nil // its address is a field nothing sets: not in use
	}
	return d
}

func isRedis(pkg string) bool {
	return strings.HasPrefix(pkg, "github.com/redis/go-redis/") || strings.HasPrefix(pkg, "github.com/go-redis/redis")
}

// redisAddr traces the Addr (or first of Addrs) of a *redis.Options.
func (s *scanner) redisAddr(e ast.Expr, depth int) *Origin {
	if e == nil || depth > maxDepth {
		return nil
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return s.redisAddr(x.X, depth+1)
	case *ast.CompositeLit:
		for _, el := range x.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch key, _ := kv.Key.(*ast.Ident); {
			case key == nil:
			case key.Name == "Addr":
				return s.origin(kv.Value)
			case key.Name == "Addrs":
				if cl, ok := ast.Unparen(kv.Value).(*ast.CompositeLit); ok && len(cl.Elts) > 0 {
					return s.origin(cl.Elts[0])
				}
				return s.origin(kv.Value)
			}
		}
		return nil
	case *ast.Ident, *ast.SelectorExpr:
		obj := s.objOf(x)
		if obj == nil || s.busy[obj] {
			return nil
		}
		s.busy[obj] = true
		defer delete(s.busy, obj)
		var found []*Origin
		if v, ok := obj.(*types.Var); ok {
			if arg, ok := s.bound[v]; ok {
				return s.redisAddr(arg, depth+1)
			}
		}
		for _, d := range s.defs[obj] {
			found = append(found, s.redisAddr(d, depth+1))
		}
		return best(found...)
	case *ast.CallExpr:
		fn := s.callee(x)
		if fn == nil {
			return nil
		}
		if isRedis(fnPkg(fn)) && fn.Name() == "ParseURL" {
			return s.origin(x.Args[0])
		}
		return s.returned(fn, x, depth+1, func(r ast.Expr) *Origin { return s.redisAddr(r, depth+1) })
	}
	return nil
}

// listen reads a call that listens for the service's HTTP traffic.
func (s *scanner) listen(fn *types.Func, call *ast.CallExpr) *Listen {
	pkg, name, recv := fnPkg(fn), fn.Name(), fnRecv(fn)
	l := &Listen{Pos: s.pos(call.Pos()), Call: funcName(fn), Form: "addr"}
	var addr ast.Expr
	switch {
	case pkg == "net/http" && recv == "" && (name == "ListenAndServe" || name == "ListenAndServeTLS"):
		addr = call.Args[0]
	case pkg == "net/http" && recv == "Server" && (name == "ListenAndServe" || name == "ListenAndServeTLS"):
		// The server's Addr field, wherever it was set.
		if t, ok := s.info.Types[receiver(call)]; ok {
			if st, ok := under(t.Type).(*types.Struct); ok {
				for i := range st.NumFields() {
					if st.Field(i).Name() == "Addr" {
						l.Origin = s.objOrigin(st.Field(i), 0)
						for _, d := range s.defs[st.Field(i)] {
							if portForm(d) {
								l.Form = "port"
							}
						}
					}
				}
			}
		}
	case pkg == "net" && recv == "" && name == "Listen" && len(call.Args) == 2:
		addr = call.Args[1]
	case router(pkg) == "gin" && recv == "Engine" && name == "Run":
		if len(call.Args) == 0 {
			// gin's Run() listens on $PORT, else :8080.
			l.Origin, l.Form = &Origin{Kind: "env", Name: "PORT", Pos: l.Pos}, "port"
		} else {
			addr = call.Args[0]
		}
	case router(pkg) == "echo" && recv == "Echo" && name == "Start":
		addr = call.Args[0]
	default:
		return nil
	}
	if addr != nil {
		l.Origin = s.origin(addr)
		if portForm(addr) {
			l.Form = "port"
		}
	}
	if l.Origin != nil && l.Origin.Configurable() && l.Form == "addr" && portName.MatchString(l.Origin.Name) && !strings.Contains(l.Origin.Value, ":") {
		l.Form = "port"
	}
	return l
}

var portName = regexp.MustCompile(`(?i)port$`)

// portForm says whether an address expression adds the colon itself
// (":" + port, fmt.Sprintf(":%s", port)).
func portForm(e ast.Expr) bool {
	switch x := ast.Unparen(e).(type) {
	case *ast.BinaryExpr:
		if lit, ok := ast.Unparen(x.X).(*ast.BasicLit); ok && strings.HasSuffix(strings.Trim(lit.Value, "\"`"), ":") {
			return true
		}
		return portForm(x.X)
	case *ast.CallExpr:
		if len(x.Args) > 1 {
			if lit, ok := ast.Unparen(x.Args[0]).(*ast.BasicLit); ok && strings.HasPrefix(strings.Trim(lit.Value, "\"`"), ":%") {
				return true
			}
		}
	}
	return false
}

// mounts says whether routes of another router lie below prefix.
func (svc *Service) mounts(prefix string) bool {
	for _, r := range svc.Routes {
		if r.Router != "net/http" && strings.HasPrefix(r.Path, prefix) {
			return true
		}
	}
	return false
}

// note records what the scan could not infer.
func (svc *Service) note(p Pos, format string, args ...any) {
	svc.Notes = append(svc.Notes, Note{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

// finish removes duplicates, orders what was found and notes what is
// missing.
func (svc *Service) finish(s *scanner) {
	seen := map[string]bool{}
	routes := svc.Routes[:0]
	for _, r := range svc.Routes {
		if !seen[r.Key()] {
			seen[r.Key()] = true
			routes = append(routes, r)
		}
	}
	// A net/http subtree pattern ("/api/") that hands its requests to
	// another router is a mount, not a route.
	routes = svc.Routes[:0]
	for _, r := range svc.Routes {
		if r.Router == "net/http" && strings.HasSuffix(r.Path, "/") && r.Path != "/" && svc.mounts(r.Path) {
			continue
		}
		routes = append(routes, r)
	}
	svc.Routes = routes
	sortRoutes(svc.Routes)
	bestHealth := len(healthNames)
	for i, r := range svc.Routes {
		if !r.Readable() || len(r.Params) > 0 {
			continue
		}
		if m := healthPath.FindStringSubmatch(r.Path); m != nil {
			if k := slices.Index(healthNames, strings.ToLower(m[1])); k < bestHealth {
				svc.Health, bestHealth = &svc.Routes[i], k
			}
		}
	}
	// One dependency per kind and address: pgx.ParseConfig and sql.Open
	// of the same DSN are one database.
	seen = map[string]bool{}
	deps := svc.Deps[:0]
	for _, d := range svc.Deps {
		key := d.Kind + "|" + d.Pos.String()
		if d.Origin.Configurable() {
			key = d.Kind + "|" + d.Origin.Kind + "|" + d.Origin.Name
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		deps = append(deps, d)
	}
	// Outgoing HTTP calls whose address the service computes from another
	// dependency's (a gRPC service's HTTP side) are kept once.
	svc.Deps = deps
	for _, d := range svc.Deps {
		if !d.Origin.Configurable() {
			svc.note(d.Pos, "%s dependency (%s): its address is %s, not a flag or an environment variable; the scenario cannot point it at a proxy", d.Kind, d.Client, d.Origin)
		}
	}
	switch {
	case svc.Listen == nil:
		svc.note(Pos{File: s.rel(s.dir)}, "no call that listens (http.ListenAndServe, (*http.Server).ListenAndServe, net.Listen, gin's Run, echo's Start) was found")
	case !svc.Listen.Origin.Configurable():
		svc.note(svc.Listen.Pos, "%s listens on %s, not on an address from a flag or an environment variable", svc.Listen.Call, svc.Listen.Origin)
	}
	if svc.Health == nil {
		svc.note(Pos{}, "no health route (/healthz, /health, /readyz, /livez, /ping)")
	}
}
