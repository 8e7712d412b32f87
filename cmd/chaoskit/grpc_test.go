package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const grpcScenario = `name: grpc-load
target:
  command:
    argv: [%s, --listen, "127.0.0.1:{port}", --grpc, "127.0.0.1:{port:grpc}"%s]
  url: http://127.0.0.1:{port}
  grpc:
    address: "%s:{port:grpc}"%s
classify:
  source_header: x-source
load:
  rate: %s
  timeout: 1s
  requests:
    - grpc:
        method: %s
        message: {id: "{1..100}"}
        metadata: {x-tenant: t1}
        deadline: 500ms
phases:
  - name: steady
    duration: %s
contracts:
  - name: every item is served
    phase: steady
    expect:
      - grpc_code == "OK" for >= 99%%
      - class == "primary" for >= 99%%
      - json("tenant") == "t1" for >= 99%%
`

// TestGRPCTargetAt1000PerSecond loads testdata/grpcservice, a gRPC service
// learnt by server reflection, at 1,000 calls/s for 10 s; run.json reports
// the rate achieved, and the contract (codes, the source in the response
// metadata, a field of the response message) passes.
func TestGRPCTargetAt1000PerSecond(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	svc := buildFixture(t, dir, "grpcservice")
	scenario := writeFile(t, dir, "grpc.yaml", sprintf(grpcScenario, svc, "", "127.0.0.1", "", "1000/s", "fixture.Items/GetItem", "10s"))
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", scenario, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	runDir := filepath.Join(out, "grpc-load")
	assertNoOrphans(t, readTimeline(t, runDir))
	sum := readRunSummary(t, runDir)
	rate := sum.Phases[0].Rate
	t.Logf("achieved %.1f calls/s over gRPC (%d calls in %v)", rate, sum.Phases[0].Requests, sum.Phases[0].Actual)
	if rate < 990 || rate > 1010 {
		t.Errorf("achieved rate %.1f/s, want 1000/s within 1%%", rate)
	}
}

// TestGRPCTargetFailsAndRefuses: the service's broken variant (every call
// UNAVAILABLE) fails the contract (exit 1); an unknown method (found by
// reflection once the service runs), a message that does not fit (against
// the descriptor set the scenario names) and a non-loopback address are
// invalid input, exit 2, at their place with a hint.
func TestGRPCTargetFailsAndRefuses(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	svc := buildFixture(t, dir, "grpcservice")
	run := func(name, flags, host, extra, method string) result {
		scenario := writeFile(t, dir, name+".yaml", sprintf(grpcScenario, svc, flags, host, extra, "100/s", method, "1s"))
		return runBin(t, bin, "run", scenario, "--report-dir", filepath.Join(dir, "out-"+name))
	}
	res := run("broken", ", --unavailable", "127.0.0.1", "", "fixture.Items/GetItem")
	if res.code != 1 || !strings.Contains(res.stdout, "fail") {
		t.Errorf("the UNAVAILABLE variant: exit %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = run("unknown", "", "127.0.0.1", "", "fixture.Items/GetIten")
	if res.code != 2 || !strings.Contains(res.stderr, `unknown.yaml:15:17: grpc service fixture.Items has no method GetIten (did you mean "fixture.Items/GetItem"?)`) {
		t.Errorf("an unknown method: exit %d, want 2 at its place\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	descriptors := filepath.Join(dir, "items.pb")
	if out, err := exec.Command(svc, "--descriptors", descriptors).CombinedOutput(); err != nil {
		t.Fatalf("%s --descriptors: %v\n%s", svc, err, out)
	}
	scenario := writeFile(t, dir, "misfit.yaml", strings.Replace(sprintf(grpcScenario, svc, "", "127.0.0.1", "\n    descriptor_set: items.pb", "100/s", "fixture.Items/GetItem", "1s"),
		`{id: "{1..100}"}`, `{id: "{1..100}", colour: red}`, 1))
	res = runBin(t, bin, "run", scenario, "--report-dir", filepath.Join(dir, "out-misfit"))
	if res.code != 2 || !strings.Contains(res.stderr, `misfit.yaml:17:18: the message does not fit fixture.GetItemRequest`) || !strings.Contains(res.stderr, "id (int32)") {
		t.Errorf("a message that does not fit: exit %d, want 2 at its place with the fields\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	res = run("remote", "", "192.0.2.1", "", "fixture.Items/GetItem")
	if res.code != 2 || !strings.Contains(res.stderr, `remote.yaml:7:14: "192.0.2.1" is not a loopback address`) {
		t.Errorf("a non-loopback address: exit %d, want 2 at its place\n%s\n%s", res.code, res.stdout, res.stderr)
	}
}
