package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// grpcOnlyScenario starts testdata/grpcservice serving gRPC only (no
// HTTP listener) with no target.url: readiness is the gRPC health
// protocol; %[2]s adds to its flags, %[3]s to target.grpc, %[4]s to the
// scenario.
const grpcOnlyScenario = `name: grpc-only
target:
  command:
    argv: [%[1]s, --listen, "", --grpc, "127.0.0.1:{port:grpc}"%[2]s]
  grpc:
    address: "127.0.0.1:{port:grpc}"%[3]s
  ready: {timeout: 3s}
load:
  rate: 50/s
  timeout: 1s
  requests:
    - grpc:
        method: fixture.Items/GetItem
        message: {id: "{1..100}"}
phases:
  - name: steady
    duration: 1s
contracts:
  - name: every item is served
    phase: steady
    min_samples: 20
    expect:
      - grpc_code == "OK" for >= 99%%
%[4]s`

// TestGRPCOnlyTarget runs testdata/grpcservice with no HTTP listener and
// no target.url: it is ready by grpc.health.v1 (the whole server, or a
// service named in target.grpc.health), or, with its health service left
// out, by a TCP connect, with a note; the contract passes each time. A
// health service name the server does not know leaves it never ready
// (exit 3, naming it), and what needs HTTP (a plain request, a setup
// step) is refused at its place (exit 2).
func TestGRPCOnlyTarget(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	svc := buildFixture(t, dir, "grpcservice")
	run := func(name, flags, grpc, extra string) result {
		scenario := writeFile(t, dir, name+".yaml", sprintf(grpcOnlyScenario, svc, flags, grpc, extra))
		return runBin(t, bin, "run", scenario, "--report-dir", filepath.Join(dir, "out-"+name))
	}
	for _, tt := range []struct{ name, flags, grpc, note string }{
		{"health", "", "", ""},
		{"named", "", "\n    health: fixture.Items", ""},
		{"nohealth", ", --no-health", "", "answers UNIMPLEMENTED to grpc.health.v1.Health/Check"},
	} {
		res := run(tt.name, tt.flags, tt.grpc, "")
		if res.code != 0 {
			t.Errorf("%s: exit %d, want 0\n%s\n%s", tt.name, res.code, res.stdout, res.stderr)
			continue
		}
		if got := strings.Contains(res.stdout+res.stderr, "answers UNIMPLEMENTED"); got != (tt.note != "") {
			t.Errorf("%s: the note on a server without a health service printed: %v\n%s", tt.name, got, res.stdout)
		}
		assertNoOrphans(t, readTimeline(t, filepath.Join(dir, "out-"+tt.name, "grpc-only")))
	}

	res := run("unknown", "", "\n    health: fixture.Nothing", "")
	if res.code != 3 || !strings.Contains(res.stderr, `the server knows no service "fixture.Nothing"`) {
		t.Errorf("an unknown health service: exit %d, want 3 naming it\n%s\n%s", res.code, res.stdout, res.stderr)
	}

	for _, tt := range []struct{ name, extra, want string }{
		{"http-request", "", ""},
		{"http-setup", "setup:\n  - {http: POST /login}\n", `grpc-only-http-setup.yaml:25:12: setup step "setup 1" needs an HTTP target, and target has no url`},
	} {
		text := sprintf(grpcOnlyScenario, svc, "", "", tt.extra)
		if tt.name == "http-request" {
			text = strings.Replace(text, "    - grpc:\n", "    - path: /items\n    - grpc:\n", 1)
			tt.want = "grpc-only-http-request.yaml:12:7: an HTTP request needs an HTTP target, and target has no url"
		}
		scenario := writeFile(t, dir, "grpc-only-"+tt.name+".yaml", text)
		res := runBin(t, bin, "validate", scenario)
		if res.code != 2 || !strings.Contains(res.stdout+res.stderr, tt.want) {
			t.Errorf("%s: exit %d, want 2 and %q\n%s\n%s", tt.name, res.code, tt.want, res.stdout, res.stderr)
		}
	}
}

// TestGRPCTargetOverTLS runs testdata/grpcservice serving gRPC over TLS
// only: with target.grpc.tls, readiness (the health protocol) and the
// load speak TLS to it, trusting the certificate chaoskit generated for
// the run or the CA file the scenario names, and the contract passes.
// Trusting another CA, or speaking plain text to it, the run stops with
// exit 3 before any load, saying why; nothing is left running.
func TestGRPCTargetOverTLS(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	svc := buildFixture(t, dir, "grpcservice")
	writeTestCA(t, dir, "ca.pem", "cert.pem", "key.pem")
	other := t.TempDir()
	writeTestCA(t, other, "ca.pem", "cert.pem", "key.pem")
	writeFile(t, dir, "other-ca.pem", string(mustRead(t, filepath.Join(other, "ca.pem"))))
	own := `, --cert, ` + filepath.Join(dir, "cert.pem") + `, --key, ` + filepath.Join(dir, "key.pem")
	for _, tt := range []struct{ name, flags, grpc, want string }{
		{"generated", `, --cert, "{tls:cert}", --key, "{tls:key}"`, "\n    tls: true\n  tls: {generate: true}", ""},
		{"named-ca", own, "\n    tls: true\n  tls: {ca: ca.pem}", ""},
		{"other-ca", own, "\n    tls: true\n  tls: {ca: other-ca.pem}", "certificate signed by unknown authority"},
		{"plain", own, "", "the target was not ready within 3s"},
	} {
		scenario := writeFile(t, dir, tt.name+".yaml", sprintf(grpcOnlyScenario, svc, tt.flags, tt.grpc, ""))
		out := filepath.Join(dir, "out-"+tt.name)
		res := runBin(t, bin, "run", scenario, "--report-dir", out)
		if tt.want == "" && res.code != 0 {
			t.Errorf("%s: exit %d, want 0\n%s\n%s", tt.name, res.code, res.stdout, res.stderr)
		}
		if tt.want != "" && (res.code != 3 || !strings.Contains(res.stderr, tt.want)) {
			t.Errorf("%s: exit %d, want 3 and %q\n%s\n%s", tt.name, res.code, tt.want, res.stdout, res.stderr)
		}
		assertNoOrphans(t, readTimeline(t, filepath.Join(out, "grpc-only")))
	}
}
