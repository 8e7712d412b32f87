package plan

import (
	"strings"
	"testing"
)

// grpcOnly is a scenario whose target serves gRPC only, with no url;
// EXTRA adds to it.
const grpcOnly = `name: grpc-only
target:
  command:
    argv: [./svc, --grpc, "127.0.0.1:{port:grpc}"]
  grpc:
    address: "127.0.0.1:{port:grpc}"
    health: fixture.Items
load:
  rate: 10/s
  requests:
    - grpc: {method: fixture.Items/GetItem, message: {id: "1"}}
phases:
  - name: p
    duration: 1s
EXTRA`

func TestGRPCOnlyTargetNeedsNoURL(t *testing.T) {
	sc, err := Parse("g.yaml", []byte(strings.Replace(grpcOnly, "EXTRA", "", 1)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Target.GRPCOnly() || sc.Target.GRPC.Health != "fixture.Items" {
		t.Errorf("GRPCOnly = %v, health %q", sc.Target.GRPCOnly(), sc.Target.GRPC.Health)
	}
	tests := []struct{ name, extra, want string }{
		{"an HTTP phase load", `    load: {requests: [{path: /items}]}
`, `g.yaml:15:23: an HTTP request needs an HTTP target, and target has no url`},
		{"an HTTP setup step", `setup: [{http: POST /login}]
`, `g.yaml:15:16: setup step "setup 1" needs an HTTP target, and target has no url`},
		{"an HTTP teardown step", `teardown: [{http: DELETE /all}]
`, `g.yaml:15:19: teardown step "teardown 1" needs an HTTP target, and target has no url`},
		{"a read-back", `writes: [{requests: {method: POST}, read: "GET /x"}]
`, `g.yaml:15:9: reading writes back needs an HTTP target, and target has no url`},
		{"an HTTP probe", `probes: [{name: n, http: GET /n, value: "{json.n}"}]
`, `probe "n" needs an HTTP target, and target has no url`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(strings.Replace(grpcOnly, "EXTRA", tt.extra, 1)), Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	// State and metrics endpoints are HTTP too.
	for _, field := range []string{"state: {path: /state}", "metrics: {path: /metrics}"} {
		text := strings.Replace(strings.Replace(grpcOnly, "EXTRA", "", 1), "  grpc:\n", "  "+field+"\n  grpc:\n", 1)
		if _, err := Parse("g.yaml", []byte(text), Options{}); err == nil || !strings.Contains(err.Error(), "endpoint needs an HTTP target") {
			t.Errorf("%s: err = %v, want it refused", field, err)
		}
	}
	// A command target with neither url nor grpc still needs its url.
	text := strings.Replace(strings.Replace(grpcOnly, "EXTRA", "", 1), "  grpc:\n    address: \"127.0.0.1:{port:grpc}\"\n    health: fixture.Items\n", "", 1)
	if _, err := Parse("g.yaml", []byte(text), Options{}); err == nil || !strings.Contains(err.Error(), "target.command needs a url") {
		t.Errorf("no url, no grpc: err = %v", err)
	}
}
