package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chaoskit/chaoskit/timeline"
)

// netns is a network namespace the test made: loopback up, no route to
// anywhere, and one address that is not loopback (trapAddr, on lo), where
// a trap counts every connection. chaoskit runs inside it; whatever it
// dials outside loopback either fails (no route) or lands in the trap.
type netns struct {
	name string
	fd   *os.File
}

const trapAddr = "10.253.0.1"

// newNetns creates the namespace, or skips (fails under CI=1) when the
// test cannot: it needs root and iproute2.
func newNetns(t *testing.T) *netns {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if _, err := exec.LookPath("ip"); err != nil {
		why = "no ip command (apt-get install iproute2)"
	}
	if why != "" {
		if os.Getenv("CI") == "1" {
			t.Fatalf("cannot create a network namespace: %s", why)
		}
		t.Skipf("needs a network namespace of its own: %s (CI=1 makes this a failure)", why)
	}
	n := &netns{name: fmt.Sprintf("chaoskit-test-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", n.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", n.name).Run() })
	ip("-n", n.name, "link", "set", "lo", "up")
	ip("-n", n.name, "addr", "add", trapAddr+"/32", "dev", "lo")
	if out, _ := exec.Command("ip", "-n", n.name, "route", "show").Output(); len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("the namespace has routes: %s", out)
	}
	fd, err := os.Open("/run/netns/" + n.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fd.Close() })
	n.fd = fd
	return n
}

// do runs f on a thread inside the namespace: sockets f creates belong to
// it, whichever thread uses them later.
func (n *netns) do(t *testing.T, f func()) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- err
			return
		}
		defer orig.Close()
		if err := setns(n.fd); err != nil {
			done <- err
			return
		}
		f()
		if err := setns(orig); err != nil {
			done <- fmt.Errorf("back to the test's namespace: %w", err) // the thread stays locked and dies
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func setns(f *os.File) error { return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET) }

func (n *netns) listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	var err error
	n.do(t, func() { ln, err = net.Listen("tcp", addr) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// command runs argv inside the namespace.
func (n *netns) command(argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.name}, argv...)...)
}

// trap counts the connections made to it.
func (n *netns) trap(t *testing.T) (addr string, hits *atomic.Int32) {
	t.Helper()
	return n.trapAt(t, trapAddr+":0")
}

// trapAt counts the connections made to addr, an address of n's.
func (n *netns) trapAt(t *testing.T, addr string) (string, *atomic.Int32) {
	t.Helper()
	ln := n.listen(t, addr)
	hits := new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	return ln.Addr().String(), hits
}

// TestControlTrafficStaysOnLoopback runs chaoskit in a network namespace
// with no routes, against the fixture in the same namespace, behind a
// proxy that answers some paths with a redirect to the trap: readiness,
// state sampling, the catalog lookup of a running service, fault control
// and rollback of a hand-edited fault record must never reach it.
func TestControlTrafficStaysOnLoopback(t *testing.T) {
	bin := chaoskitBin(t)
	fix := fixtureBin(t)
	ns := newNetns(t)
	t.Parallel()
	trap, hits := ns.trap(t)

	// The fixture, inside the namespace.
	fx := ns.command(fix, "--listen", "127.0.0.1:18080")
	fx.Env = append(os.Environ(), "GO_FAILPOINTS_HTTP=127.0.0.1:17070")
	stdout, _ := fx.StdoutPipe()
	if err := fx.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.Process.Kill(); fx.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "listening on ") {
		t.Fatalf("fixture: %q, %v", line, err)
	}
	go io.Copy(io.Discard, stdout)

	// The proxy in front of it: /to-trap... and /ctl... redirect to the
	// trap, the rest goes to the fixture (or its control endpoint).
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		ns.do(t, func() { c, err = (&net.Dialer{}).DialContext(ctx, network, addr) })
		return c, err
	}
	proxyTo := func(target string) *httputil.ReverseProxy {
		u, _ := url.Parse(target)
		rp := httputil.NewSingleHostReverseProxy(u)
		rp.Transport = &http.Transport{DialContext: dial}
		return rp
	}
	service, control := proxyTo("http://127.0.0.1:18080"), proxyTo("http://127.0.0.1:17070")
	ln := ns.listen(t, "127.0.0.1:0")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/to-trap"), strings.HasPrefix(r.URL.Path, "/ctl"):
			http.Redirect(w, r, "http://"+trap+r.URL.Path, http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/control"):
			r.URL.Path = strings.TrimPrefix(r.URL.Path, "/control")
			control.ServeHTTP(w, r)
		default:
			service.ServeHTTP(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	proxy := "http://" + ln.Addr().String()

	scenario := func(target string) string {
		return fmt.Sprintf(`name: in-netns
target:
%s
load:
  rate: 20/s
  timeout: 1s
  requests: [{path: /items/1}]
phases:
  - name: only
    duration: 500ms
    faults:
      - point: itemQuery
        action: error
contracts:
  - name: answers
    min_samples: 1
    expect: [status == 200 for >= 1%%]
`, target)
	}
	points := "  points: [" + fixturePkg + "/itemQuery]\n"
	for _, tt := range []struct {
		name   string
		target string
		code   int
		says   []string
		// timeline checks the run's record, when the run makes one.
		timeline func(t *testing.T, tl *timeline.Timeline)
	}{
		{"readiness", "  url: " + proxy + "\n  failpoints: " + proxy + "/control\n  ready: {path: /to-trap/healthz, timeout: 1s}\n" + points,
			3, []string{"302 Found redirects to http://" + trap + "/to-trap/healthz", "follows no redirects"}, nil},
		{"state sampling", "  url: " + proxy + "\n  failpoints: " + proxy + "/control\n  state: {path: /to-trap/state, interval: 50ms}\n" + points,
			-1, nil, func(t *testing.T, tl *timeline.Timeline) {
				for _, e := range tl.Events {
					if e.Kind == timeline.State && strings.Contains(e.Message, "redirects to http://"+trap) {
						return
					}
				}
				t.Error("no failed state sample naming the redirect")
			}},
		{"fault hits", "  url: " + proxy + "\n  failpoints: " + proxy + "/control\n  hits: /to-trap/hits\n" + points, -1, nil, nil},
		{"catalog of a running service", "  url: " + proxy + "\n  failpoints: " + proxy + "/control\n  hits: /to-trap/hits\n",
			2, []string{"answered 302 Found", "follows no redirects"}, nil},
		{"fault control", "  url: " + proxy + "\n  failpoints: " + proxy + "/ctl\n  ready: {timeout: 1s}\n" + points,
			3, []string{"control endpoint " + proxy + "/ctl: control endpoint listing failed: 302"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			cmd := ns.command(bin, "run", writeFile(t, dir, "s.yaml", scenario(tt.target)), "--report-dir", out)
			cmd.Env = testEnv(t)
			var buf strings.Builder
			cmd.Stdout, cmd.Stderr = &buf, &buf
			cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if tt.code >= 0 && code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, buf.String())
			}
			for _, s := range tt.says {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, buf.String())
				}
			}
			if tt.timeline != nil {
				tt.timeline(t, readTimeline(t, filepath.Join(out, "in-netns")))
			}
			if n := hits.Swap(0); n != 0 {
				t.Errorf("chaoskit connected %d times to %s, outside loopback\n%s", n, trap, buf.String())
			}
		})
	}

	// A fault record edited by hand to name the trap: rollback refuses it
	// without sending anything.
	t.Run("rollback of an edited record", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "faults.json", `{"control": "http://`+trap+`", "points": ["`+fixturePkg+`/itemQuery"]}`)
		cmd := ns.command(bin, "rollback", dir)
		cmd.Env = testEnv(t)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(string(out), "loopback addresses only") || !strings.Contains(string(out), "was the record edited?") {
			t.Errorf("rollback: exit %d\n%s", code, out)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("rollback connected %d times to %s\n%s", n, trap, out)
		}
	})
}
