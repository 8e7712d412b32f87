package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The addresses of the veth pair between chaoskit's namespace and the
// service's (peerNetns): chaoskit's end, the service's, and a second
// address of the service's end that no scenario allows.
const (
	vethOwn     = "10.254.0.1"
	vethService = "10.254.0.2"
	vethOther   = "10.254.0.3"
)

// peerNetns creates a second namespace joined to n by a veth pair: n gets
// vethOwn, the new one vethService and vethOther, both on a /24 of their
// own. Nothing else is routed anywhere.
func peerNetns(t *testing.T, n *netns) *netns {
	t.Helper()
	p := &netns{name: n.name + "-svc"}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", p.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", p.name).Run() })
	ip("-n", n.name, "link", "add", "ck0", "type", "veth", "peer", "name", "ck1", "netns", p.name)
	ip("-n", n.name, "addr", "add", vethOwn+"/24", "dev", "ck0")
	ip("-n", n.name, "link", "set", "ck0", "up")
	ip("-n", p.name, "link", "set", "lo", "up")
	ip("-n", p.name, "addr", "add", vethService+"/24", "dev", "ck1")
	ip("-n", p.name, "addr", "add", vethOther+"/24", "dev", "ck1")
	ip("-n", p.name, "link", "set", "ck1", "up")
	fd, err := os.Open("/run/netns/" + p.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.Close() })
	p.fd = fd
	return p
}

// reachScenario runs the fixture at %[1]s (its failpoint control endpoint
// at %[2]s) through a store outage; %[3]s is what else the scenario says.
const reachScenario = `name: reach
%[3]s
target:
  url: http://%[1]s
  failpoints: http://%[2]s
  points: [` + fixturePkg + `/itemQuery]
  ready: {timeout: 5s}
load:
  rate: 50/s
  timeout: 1s
  requests: [{path: "/items/{1..20}"}]
phases:
  - name: warmup
    duration: 500ms
  - name: store-down
    duration: 1s
    faults:
      - point: itemQuery
        action: error
contracts:
  - name: store errors are served from the fallback
    phase: store-down
    settle: 300ms
    min_samples: 10
    expect:
      - status == 200 for >= 99%%
      - header("X-Chaoskit-Source") == "fallback" for >= 99%%
`

// TestReachByConsent runs chaoskit in a namespace of its own, against the
// fixture in another namespace at the far end of a veth pair: no address
// of it is loopback. The scenario reaches it only when its allow_hosts
// lists the host and --allow-host names it too; the run then sends load,
// readiness and fault control there, directly or through a proxy whose
// upstream is there, and the contract passes. A second
// address of the service's namespace that is not allowed (a probe, a proxy
// upstream, a redirect, an edited fault record) never receives a
// connection, nor does the trap on chaoskit's side.
func TestReachByConsent(t *testing.T) {
	bin := chaoskitBin(t)
	fix := fixtureBin(t)
	ns := newNetns(t)
	svc := peerNetns(t, ns)
	t.Parallel()
	trap, trapHits := ns.trap(t)
	other, otherHits := svc.trapAt(t, vethOther+":0")

	// The fixture, on the service namespace's veth address.
	addr, control := vethService+":18080", vethService+":17070"
	fx := svc.command(fix, "--listen", addr)
	fx.Env = append(os.Environ(), "GO_FAILPOINTS_HTTP="+control)
	stdout, _ := fx.StdoutPipe()
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Process.Kill(); fx.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "listening on ") {
		t.Fatalf("fixture: %q, %v", line, err)
	}
	go io.Copy(io.Discard, stdout)

	// A server on the allowed host that redirects everything to the
	// address that is not allowed.
	redirectLn := svc.listen(t, vethService+":0")
	redirect := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+other+r.URL.Path, http.StatusFound)
	})}
	go redirect.Serve(redirectLn)
	t.Cleanup(func() { redirect.Close() })

	run := func(t *testing.T, args ...string) (int, string) {
		t.Helper()
		cmd := ns.command(append([]string{bin}, args...)...)
		cmd.Env = testEnv(t)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	scenario := func(t *testing.T, target, control, extra string) string {
		return writeFile(t, t.TempDir(), "s.yaml", fmt.Sprintf(reachScenario, target, control, extra))
	}
	for _, tt := range []struct {
		name  string
		file  func(t *testing.T) string
		args  []string
		code  int
		says  []string
		check func(t *testing.T, out string)
	}{
		{"not listed", func(t *testing.T) string { return scenario(t, addr, control, "") },
			[]string{"validate"}, 2,
			[]string{`s.yaml:4:8: "` + vethService + `" is not a loopback address`, "add allow_hosts: [" + vethService + "] to the scenario and --allow-host " + vethService}, nil},
		{"listed without the flag", func(t *testing.T) string { return scenario(t, addr, control, "allow_hosts: ["+vethService+"]") },
			[]string{"run"}, 2,
			[]string{`s.yaml:2:15: allow_hosts: ` + vethService + ` is not allowed by the command (no --allow-host ` + vethService + `)`, "add --allow-host " + vethService + " to the command"}, nil},
		{"the flag without the listing", func(t *testing.T) string { return scenario(t, addr, control, "") },
			[]string{"run", "--allow-host", vethService}, 2,
			[]string{`s.yaml:4:8: "` + vethService + `" is not a loopback address`}, nil},
		{"consented", func(t *testing.T) string { return scenario(t, addr, control, "allow_hosts: ["+vethService+"]") },
			[]string{"run", "--allow-host", "192.0.2.1," + vethService}, 0,
			[]string{"PASS"}, nil},
		{"through a proxy to the allowed host", func(t *testing.T) string {
			return scenario(t, "127.0.0.1:18090", control, "allow_hosts: ["+vethService+"]\nproxies:\n  - {name: svc, listen: \"127.0.0.1:18090\", upstream: \""+addr+"\"}")
		}, []string{"run", "--allow-host", vethService}, 0,
			[]string{"PASS"}, nil},
		{"a probe on a host not allowed", func(t *testing.T) string {
			return scenario(t, addr, control, "allow_hosts: ["+vethService+"]\nprobes:\n  - {name: other, prometheus: \"http://"+other+"\", query: up}")
		}, []string{"run", "--allow-host", vethService}, 2,
			[]string{`s.yaml:4:31: probe "other": prometheus "` + vethOther + `" is not a loopback address`}, nil},
		{"a proxy upstream not allowed", func(t *testing.T) string {
			return scenario(t, addr, control, "allow_hosts: ["+vethService+"]\nproxies:\n  - {name: up, upstream: \""+other+"\"}")
		}, []string{"run", "--allow-host", vethService}, 2,
			[]string{`proxy "up": "` + other + `" is not a loopback address`}, nil},
		{"a redirect to a host not allowed", func(t *testing.T) string {
			return scenario(t, redirectLn.Addr().String(), control, "allow_hosts: ["+vethService+"]")
		}, []string{"run", "--allow-host", vethService}, 3,
			[]string{"302 Found redirects to http://" + other, "follows no redirects"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(tt.args[:1:1], tt.file(t))
			if tt.args[0] == "run" {
				args = append(args, "--report-dir", filepath.Join(dir, "out"))
			}
			code, out := run(t, append(args, tt.args[1:]...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			for _, s := range tt.says {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q:\n%s", s, out)
				}
			}
			if tt.code == 0 {
				tl := readTimeline(t, filepath.Join(dir, "out", "reach"))
				if len(tl.Requests) == 0 {
					t.Error("the run recorded no request")
				}
			}
			if n := otherHits.Swap(0); n != 0 {
				t.Errorf("chaoskit connected %d times to %s, which no scenario allows\n%s", n, other, out)
			}
			if n := trapHits.Swap(0); n != 0 {
				t.Errorf("chaoskit connected %d times to %s, outside loopback\n%s", n, trap, out)
			}
		})
	}

	// A fault record edited to name a control endpoint beyond loopback:
	// rollback refuses it without --allow-host naming its host, whatever
	// the record says, and sends nothing; with the flag it reaches it.
	t.Run("rollback", func(t *testing.T) {
		for _, tt := range []struct {
			control string
			flags   []string
			code    int
			says    string
		}{
			{"http://" + control, nil, 3, "was the record edited?"},
			{"http://" + other, []string{"--allow-host", vethService}, 3, "was the record edited?"},
			{"http://" + control, []string{"--allow-host", vethService}, 0, "0 fault(s) disabled at http://" + control},
		} {
			dir := t.TempDir()
			writeFile(t, dir, "faults.json", `{"control": "`+tt.control+`", "points": ["`+fixturePkg+`/itemQuery"]}`)
			code, out := run(t, append([]string{"rollback", dir}, tt.flags...)...)
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Errorf("rollback of %s %v: exit %d, want %d saying %q\n%s", tt.control, tt.flags, code, tt.code, tt.says, out)
			}
			if n := otherHits.Swap(0); n != 0 {
				t.Errorf("rollback connected %d times to %s\n%s", n, other, out)
			}
		}
	})
}

// TestAllowHostOnEveryCommand: every command that loads a scenario or
// reaches a service takes --allow-host, and a value that is no host (a
// URL, a host:port) is refused with exit 2 before anything is loaded.
func TestAllowHostOnEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", oneScenario},
		{"validate", oneScenario},
		{"fuzz", "--bundled", "shop"},
		{"explore", "--bundled", "shop"},
		{"diff", oneScenario, "--base", dir, "--head", dir},
		{"rollback", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			if res := inProcess(t, args[0], "--help"); !strings.Contains(res.stdout, "--allow-host") {
				t.Errorf("%s --help lacks --allow-host:\n%s", args[0], res.stdout)
			}
			res := inProcess(t, append(args, "--allow-host", "http://svc.example:80")...)
			if res.code != 2 || !strings.Contains(res.stderr, `--allow-host: "http://svc.example:80" is a URL: write its host only`) {
				t.Errorf("exit %d, want 2 refusing the URL\n%s\n%s", res.code, res.stdout, res.stderr)
			}
		})
	}
}
