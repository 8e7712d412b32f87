package initscan

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func scan(t *testing.T, dir, pattern string) *Service {
	t.Helper()
	svc, err := Scan(context.Background(), dir, pattern)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func routeKeys(svc *Service) []string {
	var keys []string
	for _, r := range svc.Routes {
		keys = append(keys, r.Key()+" "+r.Router)
	}
	return keys
}

// TestRoutersFixture reads every router init knows, with prefixes
// (groups, sub-routers, chi's Route and Mount), methods and parameters.
func TestRoutersFixture(t *testing.T) {
	svc := scan(t, filepath.Join("..", "testdata", "init", "routers"), ".")
	want := []string{
		"GET /chi/admin/users chi",
		"GET /chi/articles chi",
		"GET /chi/articles/{articleID} chi",
		"PUT /chi/articles/{articleID} chi",
		"GET /chi/articles/{articleID}/comments/{n} chi",
		"POST /chi/login chi",
		"PATCH /chi/settings chi",
		"DELETE /echo/shop/orders/{orderId} echo",
		"GET /echo/shop/orders/{orderId} echo",
		"GET /echo/status echo",
		"GET /files/{path...} net/http",
		"HEAD /gin/ping gin",
		"GET /gin/v1/files/{filepath...} gin",
		"POST /gin/v1/users gin",
		"GET /gin/v1/users/{id} gin",
		"GET /healthz net/http",
		"DELETE /items/{id} net/http",
		"* /legacy/ net/http",
		"* /mux/api/any gorilla/mux",
		"GET /mux/api/items/{id} gorilla/mux",
		"PUT /mux/api/items/{id} gorilla/mux",
		"GET /mux/products/{key} gorilla/mux",
	}
	if got := routeKeys(svc); !slices.Equal(got, want) {
		t.Errorf("routes:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	for _, r := range svc.Routes {
		if r.Path == "/mux/api/items/{id}" && r.Patterns["id"] != "[0-9]+" {
			t.Errorf("%s: pattern of {id} = %q, want [0-9]+", r.Key(), r.Patterns["id"])
		}
	}
	if svc.Health == nil || svc.Health.Path != "/healthz" {
		t.Errorf("health = %+v, want /healthz", svc.Health)
	}
	deps := map[string]string{}
	for _, d := range svc.Deps {
		deps[d.Kind] = d.Origin.Kind + " " + d.Origin.Name + " " + d.Form + " " + d.Pos.String()
	}
	wantDeps := map[string]string{
		Postgres: "env PG_URL dsn api/deps.go:30",
		Redis:    "flag redis-url url api/deps.go:31",
		GRPC:     "flag orders addr api/deps.go:32",
		HTTP:     "env PRICING_URL url api/deps.go:38",
	}
	for k, v := range wantDeps {
		if deps[k] != v {
			t.Errorf("%s dependency: %q, want %q", k, deps[k], v)
		}
	}
	if len(deps) != len(wantDeps) {
		t.Errorf("dependencies %v, want %v", deps, wantDeps)
	}
	var notes []string
	for _, n := range svc.Notes {
		notes = append(notes, n.String())
	}
	if want := "main.go:33: the path of this net/http route is not a constant: the route is left out"; !slices.Contains(notes, want) {
		t.Errorf("notes %q lack %q", notes, want)
	}
	if l := svc.Listen; l == nil || l.Origin.Kind != "env" || l.Origin.Name != "ADDR" || l.Form != "addr" {
		t.Errorf("listen = %+v, want env ADDR (through envOr and http.Server's Addr)", l)
	}
}

// TestFixtures reads the two services init's end-to-end test runs.
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		dir, routes, dep, listen string
	}{
		{"visits", "GET /healthz net/http|GET /items net/http|POST /items net/http|GET /items/{id} net/http",
			"postgres database/sql postgres flag dsn", "flag listen addr"},
		{"catalog", "GET /healthz chi|GET /products chi|GET /products/{sku} chi|POST /products/{sku}/views chi",
			"redis go-redis  env REDIS_ADDR", "env PORT port"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			svc := scan(t, filepath.Join("..", "testdata", "init", tc.dir), "")
			if got := strings.Join(routeKeys(svc), "|"); got != tc.routes {
				t.Errorf("routes %s, want %s", got, tc.routes)
			}
			if len(svc.Deps) != 1 {
				t.Fatalf("dependencies %+v, want one", svc.Deps)
			}
			d := svc.Deps[0]
			if got := strings.Join([]string{d.Kind, d.Client, d.Driver, d.Origin.Kind, d.Origin.Name}, " "); got != tc.dep {
				t.Errorf("dependency %q, want %q", got, tc.dep)
			}
			if l := svc.Listen; l == nil || l.Origin.Kind+" "+l.Origin.Name+" "+l.Form != tc.listen {
				t.Errorf("listen %+v, want %s", l, tc.listen)
			}
			if !svc.Main || svc.Name != tc.dir {
				t.Errorf("main %v name %q", svc.Main, svc.Name)
			}
		})
	}
}

// TestDemo reads the demo: every route it serves (breakerimpl's admin
// handler's below the prefix http.StripPrefix takes off) and every
// dependency it can reach, each from its flag.
func TestDemo(t *testing.T) {
	svc := scan(t, "..", "./demo")
	want := []string{"GET /debug/chaoskit/admin/ net/http", "POST /debug/chaoskit/admin/breakers/{name}/{to} net/http",
		"POST /debug/chaoskit/admin/reload net/http", "POST /debug/chaoskit/admin/rollback/{version} net/http", "GET /debug/chaoskit/faults net/http", "GET /debug/chaoskit/state net/http", "GET /healthz net/http",
		"GET /metrics net/http", "POST /orders net/http", "GET /orders/{id} net/http", "GET /products/{id} net/http",
		"GET /products/{id}/recommendations net/http", "GET /search net/http"}
	if got := routeKeys(svc); !slices.Equal(got, want) {
		t.Errorf("routes %q, want %q (a route added to the demo belongs in this list once init finds it)", got, want)
	}
	var deps []string
	for _, d := range svc.Deps {
		deps = append(deps, d.Kind+" "+d.Origin.Kind+" "+d.Origin.Name)
	}
	slices.Sort(deps)
	wantDeps := []string{"grpc flag recommendations-grpc-dial", "http computed ", "postgres flag postgres", "redis flag redis", "sqlite flag db"}
	if !slices.Equal(deps, wantDeps) {
		t.Errorf("dependencies %q, want %q", deps, wantDeps)
	}
	if len(svc.Points) != 6 {
		t.Errorf("%d fault points, want the demo's 6 switches", len(svc.Points))
	}
	if len(svc.Resilience) == 0 {
		t.Error("no resilience call found in the demo")
	}
	if l := svc.Listen; l == nil || l.Origin.Name != "listen" {
		t.Errorf("listen %+v, want flag listen", l)
	}
}
