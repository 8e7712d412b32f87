package initwrite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/initscan"
)

func TestValuesFrom(t *testing.T) {
	for _, tc := range []struct {
		name, body, param string
		want              []string
	}{
		{"array of objects", `[{"id":1,"name":"a"},{"id":2},{"id":2},{"id":3}]`, "id", []string{"1", "2", "3"}},
		{"field named like the parameter", `[{"id":9,"sku":"sku-1"},{"sku":"sku-2"}]`, "sku", []string{"sku-1", "sku-2"}},
		{"itemID reads id", `[{"id":"a1"},{"id":"b2"}]`, "itemID", []string{"a1", "b2"}},
		{"item_id reads item_id", `[{"item_id":5,"id":1}]`, "item_id", []string{"5"}},
		{"array in an object", `{"total":2,"items":[{"id":7},{"id":8}]}`, "id", []string{"7", "8"}},
		{"scalars", `["x","y"]`, "name", []string{"x", "y"}},
		{"at most five", `[1,2,3,4,5,6,7]`, "n", []string{"1", "2", "3", "4", "5"}},
		{"unsafe values left out", `[{"id":"a/b"},{"id":"a|b"},{"id":"ok"}]`, "id", []string{"ok"}},
		{"not JSON", `<html>`, "id", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := valuesFrom([]byte(tc.body), tc.param); !slices.Equal(got, tc.want) {
				t.Errorf("valuesFrom(%s, %s) = %q, want %q", tc.body, tc.param, got, tc.want)
			}
		})
	}
}

func service() *initscan.Service {
	at := func(line int) initscan.Pos { return initscan.Pos{File: "main.go", Line: line} }
	return &initscan.Service{Name: "shop", Module: "example.com/shop", Package: "example.com/shop", Main: true,
		Routes: []initscan.Route{
			{Method: "GET", Path: "/healthz", Router: "net/http", Pos: at(1)},
			{Method: "GET", Path: "/items", Router: "net/http", Pos: at(2)},
			{Method: "GET", Path: "/items/{id}", Params: []string{"id"}, Router: "net/http", Pos: at(3)},
			{Method: "GET", Path: "/users/{name}/files/{path...}", Params: []string{"name", "path"}, Router: "net/http", Pos: at(4)},
			{Method: "POST", Path: "/items", Router: "net/http", Pos: at(5)},
			{Method: "GET", Path: "/metrics", Router: "net/http", Pos: at(6)},
		},
		Deps: []initscan.Dependency{
			{Kind: initscan.Postgres, Client: "pgx", Form: "dsn", Origin: &initscan.Origin{Kind: "flag", Name: "dsn"}, Pos: at(10)},
			{Kind: initscan.Redis, Client: "go-redis", Form: "addr", Origin: &initscan.Origin{Kind: "env", Name: "REDIS"}, Pos: at(11)},
			{Kind: initscan.GRPC, Client: "grpc", Form: "addr", Origin: &initscan.Origin{Kind: "flag", Name: "orders"}, Pos: at(12)},
		},
		Listen: &initscan.Listen{Origin: &initscan.Origin{Kind: "env", Name: "PORT"}, Form: "port", Call: "http.ListenAndServe", Pos: at(20)},
	}
}

// TestDraft wires the service's settings to the managed dependencies and
// leaves out of the load what it cannot send.
func TestDraft(t *testing.T) {
	svc := service()
	svc.Health = &svc.Routes[0]
	d := New(svc, Options{})
	if want := []string{"./bin/shop", "--dsn", "postgres://postgres@127.0.0.1:{port:postgres-proxy}/postgres?sslmode=disable"}; !slices.Equal(d.Argv, want) {
		t.Errorf("argv %q, want %q", d.Argv, want)
	}
	if want := [][2]string{{"PORT", "{port}"}, {"PGPASSWORD", "{password:postgres}"}, {"REDIS", "127.0.0.1:{port:redis-proxy}"}}; !slices.Equal(d.Env, want) {
		t.Errorf("env %q, want %q", d.Env, want)
	}
	var tags []string
	for _, lr := range d.Routes {
		tags = append(tags, lr.Tag)
	}
	if want := []string{"items", "items-id", "users-name-files-path"}; !slices.Equal(tags, want) {
		t.Errorf("loaded %q, want %q (no health, POST or operational route)", tags, want)
	}
	if d.Routes[1].Listing != d.Routes[0] || d.Routes[2].Listing != nil {
		t.Errorf("listing of /items/{id} = %v, of /users/... = %v", d.Routes[1].Listing, d.Routes[2].Listing)
	}
	notes := strings.Join(d.Notes, "\n")
	for _, want := range []string{"main.go:12: grpc dependency", "main.go:5: POST /items is not in the load", "main.go:6: GET /metrics"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	d.Fill(map[*LoadRoute]map[string][]string{d.Routes[1]: {"id": {"4", "5"}}})
	if got := []string{d.Routes[1].Path, d.Routes[2].Path}; !slices.Equal(got, []string{"/items/{4|5}", "/users/${users_name}/files/${files_path}"}) {
		t.Errorf("filled paths %q", got)
	}
	if want := [][2]string{{"users_name", "name"}, {"files_path", "path"}}; !slices.Equal(d.Vars, want) {
		t.Errorf("vars %q, want %q", d.Vars, want)
	}
	if got := len(d.Faults()); got != 6 {
		t.Errorf("%d fault phases, want 3 for each of postgres and redis", got)
	}
}

// TestPropose writes bands from figures and never below them.
func TestPropose(t *testing.T) {
	svc := service()
	svc.Deps = svc.Deps[:1]
	d := New(svc, Options{})
	d.Fill(nil)
	m := &Measurement{When: time.Unix(0, 0), Routes: map[string]*RouteStats{}}
	for i := range 100 {
		status := 200
		if i < 3 {
			status = 503
		}
		m.add("items", status, time.Duration(i+1)*time.Millisecond)
	}
	d.Propose(m)
	var items []string
	for _, p := range d.Proposals {
		if p.Tag == "items" {
			items = append(items, p.Phase+": "+strings.Join(p.Expect, "; "))
		}
	}
	want := []string{
		"postgres-latency: status == 0 || status >= 500 for <= 5%",
		"after-postgres-latency: status == 0 || status >= 500 for <= 5%; p99 latency < 399ms",
		"postgres-down: status == 0 || status >= 500 for <= 5%",
		"after-postgres-down: status == 0 || status >= 500 for <= 5%; p99 latency < 399ms",
		"postgres-restart: status == 0 || status >= 500 for <= 5%",
		"after-postgres-restart: status == 0 || status >= 500 for <= 5%; p99 latency < 399ms",
	}
	if !slices.Equal(items, want) {
		t.Errorf("proposals for items:\n%s\nwant\n%s", strings.Join(items, "\n"), strings.Join(want, "\n"))
	}
	if got := len(d.Proposals); got != 6+3 {
		t.Errorf("%d proposals, want 6 for the one measured route and 3 times to recover", got)
	}
	if got := errorBound(0.001); got != "2.1%" {
		t.Errorf("errorBound(0.1%%) = %s, want 2.1%% (rounded up)", got)
	}
}

// TestYAMLLoads renders a draft and loads it as `chaoskit run` would.
func TestYAMLLoads(t *testing.T) {
	svc := service()
	svc.Health = &svc.Routes[0]
	d := New(svc, Options{})
	d.Fill(nil)
	m := &Measurement{When: time.Unix(0, 0), Routes: map[string]*RouteStats{"items": {Count: 10, latencies: []time.Duration{time.Millisecond}}}}
	d.Propose(m)
	path := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(path, d.YAML(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := validate(path); err != nil {
		t.Fatalf("%v\n%s", err, d.YAML())
	}
	for _, want := range []string{"# Routes (6):", "REDIS: \"127.0.0.1:{port:redis-proxy}\"", "- {process: redis, action: restart}",
		"users_name: \"name\"", "(proposed)"} {
		if !strings.Contains(string(d.YAML()), want) {
			t.Errorf("scenario lacks %q", want)
		}
	}
}
