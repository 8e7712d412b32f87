package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// hostsOf gives the namespace its own /etc/hosts and /etc/resolv.conf:
// `ip netns exec` mounts /etc/netns/NAME/* over /etc/* for the command it
// runs.
func (n *netns) hostsOf(t *testing.T, hosts, resolv string) {
	t.Helper()
	dir := filepath.Join("/etc/netns", n.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for name, text := range map[string]string{"hosts": hosts, "resolv.conf": resolv} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dnsTrap counts the datagrams sent to trapAddr:53 in the namespace.
func (n *netns) dnsTrap(t *testing.T) *atomic.Int32 {
	t.Helper()
	var pc net.PacketConn
	var err error
	n.do(t, func() { pc, err = net.ListenPacket("udp", trapAddr+":53") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	hits := new(atomic.Int32)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			hits.Add(1)
		}
	}()
	return hits
}

// TestLocalhostIsNeverResolved runs chaoskit in a network namespace whose
// hosts file says localhost is the trap and whose resolver is the trap:
// a proxy listening on and forwarding to localhost, a dependency's
// ready.tcp on localhost and a target url on localhost must all reach
// loopback without reading either.
func TestLocalhostIsNeverResolved(t *testing.T) {
	bin := chaoskitBin(t)
	fix := fixtureBin(t)
	ns := newNetns(t)
	t.Parallel()
	trap, hits := ns.trap(t)
	_, trapPort, _ := net.SplitHostPort(trap)
	ns.hostsOf(t, trapAddr+" localhost\n", "nameserver "+trapAddr+"\noptions timeout:1 attempts:1\n")
	dns := ns.dnsTrap(t)
	// The dependency listens on loopback at the trap's port: a ready.tcp
	// that resolved localhost would land in the trap.
	dir := t.TempDir()
	scenario := writeFile(t, dir, "s.yaml", fmt.Sprintf(`name: resolver
target:
  command:
    argv: [%[1]s, --listen, "127.0.0.1:{port}"]
  url: http://localhost:{port:px}
dependencies:
  - name: dep
    command:
      argv: [%[1]s, --listen, "127.0.0.1:%[2]s"]
    ready: {tcp: "localhost:%[2]s"}
proxies:
  - name: px
    listen: "localhost:{port:px}"
    upstream: "localhost:{port}"
load:
  rate: 20/s
  timeout: 1s
  requests: [{path: /items/1}]
phases:
  - name: only
    duration: 500ms
    faults:
      - {proxy: px, action: latency, latency: 1ms}
contracts:
  - name: answers
    min_samples: 1
    expect: [status == 200 for >= 90%%]
`, fix, trapPort))
	cmd := ns.command(bin, "run", scenario, "--report-dir", filepath.Join(dir, "out"))
	cmd.Env = testEnv(t)
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, buf.String())
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("chaoskit connected %d times to %s, where the hosts file puts localhost\n%s", n, trap, buf.String())
	}
	if n := dns.Load(); n != 0 {
		t.Errorf("chaoskit sent %d DNS queries\n%s", n, buf.String())
	}
}
