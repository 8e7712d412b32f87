package runner

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
)

// target is a service under test, started by chaoskit or already running.
type target struct {
	spec    plan.Target
	desc    string
	baseURL string
	// grpcAddr is where the target serves gRPC (target.grpc), its ports
	// filled.
	grpcAddr string
	control  inject.Controller
	// controlAddr is the control endpoint's base URL, for the record.
	controlAddr string
	// token is sent with every control request: the run's own for a
	// service chaoskit starts, $CHAOSKIT_FAILPOINTS_TOKEN for one it does not.
	token   string
	hitsURL string
	proc    *process
	client  *http.Client
	// reach says where a target chaoskit does not start may be, for the
	// dialers of a gRPC-only target's readiness.
	reach *reach.Policy
	// grpcTLS is the TLS configuration of the gRPC address, nil for
	// plain text.
	grpcTLS *tls.Config
	// noHealth is noted once: a gRPC-only target that serves no health
	// service was found ready by a TCP connect.
	noHealth bool
	// argv, env and dir start the process again on the same address.
	argv, env []string
	dir       string
}

// startAttempts is how often a started target is retried with new ports
// when the ones chaoskit picked were taken before the target bound them.
const startAttempts = 3

// startTarget brings the scenario's target up and waits until it is ready.
func (r *run) startTarget(ctx context.Context) (*target, error) {
	spec := r.sc.Target
	t := &target{spec: spec, client: r.targetClient(controlTimeout), reach: r.sc.Reach, grpcTLS: r.grpcTLS()}
	var err error
	if spec.Demo != nil || spec.Command != nil {
		if t.token, err = newControlToken(); err != nil {
			return t, err
		}
	} else if t.token = r.opts.ControlToken; t.token == "" {
		t.token = os.Getenv(inject.TokenEnv)
	}
	switch {
	case spec.Demo != nil:
		t.desc = "demo"
		err = r.startDemo(ctx, t, spec.Demo.Args)
	case spec.Command != nil:
		t.desc = strings.Join(spec.Command.Argv, " ")
		err = r.startCommand(ctx, t)
	default:
		t.desc = spec.URL
		t.baseURL = strings.TrimRight(spec.URL, "/")
		if spec.GRPC != nil {
			t.grpcAddr = spec.GRPC.Address
			if spec.URL == "" {
				t.desc = "grpc://" + t.grpcAddr
			}
		}
		if spec.Failpoints != "" {
			t.setControl(spec.Failpoints)
		}
		t.setHits()
		err = t.waitReady(ctx, nil)
	}
	if t.noHealth {
		fmt.Fprintf(r.opts.Log, "  note: the gRPC server at %s answers UNIMPLEMENTED to grpc.health.v1.Health/Check: it was taken as ready once it accepted a TCP connection\n", t.grpcAddr)
	}
	if err == nil && t.control != nil && t.openControl(ctx) {
		fmt.Fprintf(r.opts.Log, "  note: the failpoint control endpoint %s answers without a token: any user of this machine can switch faults in the service during the run (serve it with github.com/chaoskit/chaoskit/inject, which requires the run's token; see docs/scenarios.md)\n", t.controlAddr)
	}
	return t, err
}

// openControl says whether the control endpoint lists failpoints to a
// request without a token, as pingcap/failpoint's GO_FAILPOINTS_HTTP
// endpoint does.
func (t *target) openControl(ctx context.Context) bool {
	anon := &inject.HTTPController{Base: t.controlAddr, Client: t.client}
	_, err := anon.Active(ctx)
	return err == nil
}

// setHits sets where the target's fault-hit report is read: nowhere for
// a gRPC-only target, which serves no HTTP.
func (t *target) setHits() {
	t.hitsURL = ""
	if t.baseURL != "" {
		t.hitsURL = t.baseURL + t.spec.Hits
	}
}

func (t *target) setControl(addr string) {
	t.controlAddr = normalizeURL(addr)
	t.control = &inject.HTTPController{Base: t.controlAddr, Client: t.client, Token: t.token}
}

// newControlToken makes the run's failpoint control token: 128 random bits.
func newControlToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", infra("cannot make the failpoint control token", "", err)
	}
	return hex.EncodeToString(b), nil
}

// controlEnv is what a started target is given for its failpoint control
// endpoint: the address and the run's token, which the inject package
// reads (see inject.ControlHandler).
func (t *target) controlEnv(addr string) []string {
	return []string{inject.ControlEnv + "=" + addr, inject.TokenEnv + "=" + t.token}
}

// controlTimeout bounds each request of chaoskit's own to a target:
// readiness probes, state samples, fault-hit reads and fault switches.
const controlTimeout = 2 * time.Second

func normalizeURL(s string) string {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	return strings.TrimRight(s, "/")
}

// startDemo runs `<self> demo serve` with a failpoint control endpoint on a
// free loopback port. A port taken between choosing and binding it makes
// the child exit at once; that is retried with another port.
func (r *run) startDemo(ctx context.Context, t *target, args []string) error {
	if _, err := os.Stat(r.opts.Self); err != nil {
		return infra("cannot start the demo target: "+r.opts.Self+" is missing", "reinstall chaoskit or run it by its full path", err)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			return infra("no free loopback port for the failpoint endpoint", "", err)
		}
		ctrl := "127.0.0.1:" + strconv.Itoa(port)
		argv := []string{r.opts.Self, "demo", "serve", "--listen", "127.0.0.1:0"}
		for _, a := range args {
			// {port:NAME} points the demo at a dependency or a proxy;
			// {tmpdir} at a file a setup program wrote.
			argv = append(argv, strings.ReplaceAll(plan.FillPorts(a, r.ports), plan.TempDirRef, r.scratch))
		}
		proc, err := r.spawn(argv, t.controlEnv(ctrl), "")
		if err != nil {
			return infra(fmt.Sprintf("cannot start the demo target %s", r.opts.Self), "check that the chaoskit binary exists and is executable", err)
		}
		addr, err := proc.waitLine(ctx, "listening on ", r.sc.Target.Ready.Timeout.D())
		if err != nil {
			proc.stop(time.Second)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			lastErr = err
			if portTaken(proc) {
				continue
			}
			return infra("the demo target did not start", "see target.stderr in the run directory", err)
		}
		if err := plan.CheckLoopback(addr); err != nil {
			proc.stop(time.Second)
			return infra("the demo target listens on a non-loopback address", "", err)
		}
		t.proc = proc
		t.baseURL = "http://" + addr
		t.hitsURL = t.baseURL + r.sc.Target.Hits
		t.setControl(ctrl)
		// A later --listen wins: a restart listens where this one does.
		t.argv, t.env = append(argv[:len(argv):len(argv)], "--listen", addr), t.controlEnv(ctrl)
		return t.waitReady(ctx, proc)
	}
	return infra("the demo target did not start", "free some loopback ports and retry", lastErr)
}

// startCommand starts the scenario's command with its port placeholders
// filled and its control endpoint's address and token set (see
// target.controlEnv), and waits until it is ready.
func (r *run) startCommand(ctx context.Context, t *target) error {
	names := r.sc.Target.PortNames()
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		// The ports shared with dependencies and proxies stay; those of the
		// target alone are picked again on a retry.
		ports := map[string]int{}
		for _, n := range names {
			if p, ok := r.ports[n]; ok && (attempt == 0 || r.sharedPort(n)) {
				ports[n] = p
				continue
			}
			p, err := freePort()
			if err != nil {
				return infra("no free loopback port for the target", "", err)
			}
			ports[n] = p
		}
		spec := r.sc.Target.WithPorts(ports).WithPasswords(r.passwords).WithTLSFiles(r.tls.files).WithTempDir(r.scratch)
		// A service is given a control endpoint only when the scenario
		// switches failpoints: one without markers serves none, and
		// readiness would wait for it in vain.
		if spec.Failpoints == "" && r.switchesFailpoints() {
			p, err := freePort()
			if err != nil {
				return infra("no free loopback port for the failpoint endpoint", "", err)
			}
			spec.Failpoints = "127.0.0.1:" + strconv.Itoa(p)
		}
		if err := checkFixedPorts(r.sc.Target, spec); err != nil {
			return err
		}
		cmd := spec.Command
		argv0, err := resolveProgram(cmd.Argv[0], cmd.Dir)
		if err != nil {
			return infra(fmt.Sprintf("cannot start the target: %v", err), "build it first (chaoskit build --output-file BINARY ./cmd/yourservice) or fix target.command.argv", nil)
		}
		env := r.tlsEnv()
		if spec.Failpoints != "" {
			env = append(env, t.controlEnv(hostPort(spec.Failpoints))...)
		}
		keys := make([]string, 0, len(cmd.Env))
		for k := range cmd.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+cmd.Env[k])
		}
		argv := append([]string{argv0}, cmd.Argv[1:]...)
		proc, err := r.spawn(argv, env, cmd.Dir)
		if err != nil {
			return infra("cannot start the target", "fix target.command", err)
		}
		t.proc = proc
		t.baseURL = strings.TrimRight(spec.URL, "/")
		if spec.GRPC != nil {
			t.grpcAddr = spec.GRPC.Address
		}
		t.setHits()
		if spec.Failpoints != "" {
			t.setControl(spec.Failpoints)
		}
		t.argv, t.env, t.dir = argv, env, cmd.Dir
		err = t.waitReady(ctx, proc)
		if err == nil || ctx.Err() != nil {
			return err
		}
		proc.stop(r.sc.Target.StopGrace.D())
		r.event(processEvent("stopped", map[string]any{"pid": proc.pid(), "reason": "not ready"}))
		t.proc = nil
		lastErr = err
		if len(names) > 0 && portTaken(proc) {
			continue // another process took a chosen port first
		}
		return err
	}
	return lastErr
}

// spawn starts argv with its output saved in the run directory and records
// it on the timeline.
func (r *run) spawn(argv, env []string, dir string) (*process, error) {
	env = append(append(r.scratchEnv(), env...), r.passwordEnv()...)
	proc, err := startProcess(argv, env, dir, filepath.Join(r.dir, "target.stdout"), filepath.Join(r.dir, "target.stderr"))
	if err != nil {
		return nil, err
	}
	r.event(processEvent("started", map[string]any{"pid": proc.pid(), "argv": r.masked(argv), "supervisor": proc.supervisor}))
	if !proc.subreaper {
		fmt.Fprintln(r.opts.Log, "  note: the kernel refused PR_SET_CHILD_SUBREAPER: if chaoskit is killed, processes the target started that left its process group may outlive it")
	}
	return proc, nil
}

// switchesFailpoints says whether a phase of the scenario switches a
// failpoint.
func (r *run) switchesFailpoints() bool {
	for _, p := range r.sc.Phases {
		if p.HasPointFaults() {
			return true
		}
	}
	return false
}

// restartTarget starts the target again, as it was started, on the same
// address and control endpoint, its output added to the same files, and
// waits until it is ready. Its failpoints start off.
func (r *run) restartTarget(ctx context.Context) (*process, error) {
	t := r.tgt
	env := append(append(r.scratchEnv(), t.env...), r.passwordEnv()...)
	proc, err := startProcessWith(t.argv, env, t.dir, filepath.Join(r.dir, TargetStdout), filepath.Join(r.dir, TargetStderr), startOptions{Append: true})
	if err != nil {
		return nil, err
	}
	r.event(processEvent("started", map[string]any{"pid": proc.pid(), "argv": r.masked(t.argv), "supervisor": proc.supervisor}))
	if err := t.waitReady(ctx, proc); err != nil {
		proc.stop(r.sc.Target.StopGrace.D())
		return nil, err
	}
	return proc, nil
}

// portTaken says whether a process that exited complained that its address
// was in use.
func portTaken(p *process) bool {
	if p == nil || !p.exited() {
		return false
	}
	return strings.Contains(strings.ToLower(p.stderr.String()), "address already in use")
}

// resolveProgram finds the program a command names: a path (relative to
// dir) or a name in PATH.
func resolveProgram(name, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		// Absolute: the process starts in dir, where a path relative to
		// the working directory (a scenario named ./chaoskit/svc.yaml)
		// would point elsewhere.
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			return "", fmt.Errorf("%s does not exist", p)
		case st.IsDir() || st.Mode()&0o111 == 0:
			return "", fmt.Errorf("%s is not an executable file", p)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not in PATH", name)
	}
	return p, nil
}

// checkFixedPorts refuses to start a command whose url or control endpoint
// names a fixed port that something already listens on: the service could
// not bind it, and chaoskit would attack whatever holds it.
func checkFixedPorts(orig, filled plan.Target) error {
	for _, c := range []struct{ orig, filled, field string }{
		{orig.URL, filled.URL, "url"},
		{orig.Failpoints, filled.Failpoints, "failpoints"},
		{grpcAddress(orig), grpcAddress(filled), "grpc.address"},
	} {
		if c.orig == "" || c.orig != c.filled {
			continue // empty, or a port chaoskit chose
		}
		hp := hostPort(c.filled)
		l, err := net.Listen("tcp", loopbackLiteral(hp))
		if err != nil {
			return infra(fmt.Sprintf("port %s (target.%s) is already in use by another process", hp, c.field),
				"stop what listens there, or write {port} in target."+c.field+" and the command so chaoskit picks a free port", nil)
		}
		l.Close()
	}
	return nil
}

// grpcAddress is a target's gRPC address, or "".
func grpcAddress(t plan.Target) string {
	if t.GRPC == nil {
		return ""
	}
	return t.GRPC.Address
}

// hostPort returns the host:port of a URL or host:port string.
func hostPort(s string) string {
	if u, err := url.Parse(normalizeURL(s)); err == nil && u.Host != "" {
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "80")
		}
		return u.Host
	}
	return s
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// readyPoll is how often readiness is probed.
const readyPoll = 20 * time.Millisecond

// waitReady probes the readiness path (and the control endpoint, if any)
// until both answer, the target exits, or the readiness timeout passes.
func (t *target) waitReady(ctx context.Context, proc *process) error {
	timeout := t.spec.Ready.Timeout.D()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var done <-chan struct{}
	if proc != nil {
		done = proc.done
	}
	url := t.baseURL + t.spec.Ready.Path
	probe := func() error { return t.probe(ctx, url, t.spec.Ready.Status) }
	if t.baseURL == "" && t.grpcAddr != "" {
		// A gRPC-only target: the health protocol, or a TCP connect.
		h := newGRPCHealth(t.grpcAddr, t.spec.GRPC.Health, t.reach, t.grpcTLS)
		defer h.close()
		probe = func() error {
			err := h.check(ctx)
			t.noHealth = err == nil && h.fellBack
			return err
		}
	}
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	controlDown := false
	for {
		last := probe()
		controlDown = false
		if last == nil && t.control != nil {
			if _, err := t.control.Active(ctx); err != nil {
				if errors.Is(err, inject.ErrUnauthorized) {
					return t.refusedToken(err)
				}
				if inner := errors.Unwrap(err); inner != nil {
					err = inner // past "control endpoint unreachable"
				}
				last = fmt.Errorf("control endpoint %s: %v", t.controlAddr, err)
				controlDown = true
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return infra("the target exited before it was ready ("+proc.exitDescription()+")", "see target.stderr in the run directory", nil)
		case <-deadline.C:
			hint := "check target.ready (path, status, timeout) and that the service listens at target.url"
			if t.baseURL == "" {
				hint = "check target.ready.timeout, target.grpc.health and that the service serves gRPC at target.grpc.address"
			}
			if controlDown && t.proc != nil {
				// The service answers but serves no control endpoint.
				hint = "a service chaoskit starts serves its failpoint control endpoint when it imports github.com/chaoskit/chaoskit/inject (which reads " + inject.ControlEnv + "); one on pingcap/failpoint alone needs GO_FAILPOINTS_HTTP in command.env (see \"The failpoint control endpoint\" in docs/scenarios.md)"
			}
			return infra(fmt.Sprintf("the target was not ready within %v: %v", timeout, last), hint, nil)
		case <-tick.C:
		}
	}
}

// refusedToken is the error of a control endpoint that answered 401.
func (t *target) refusedToken(err error) error {
	if t.proc == nil {
		return infra("the failpoint control endpoint "+t.controlAddr+" refused chaoskit's request", "set "+inject.TokenEnv+" in chaoskit's environment to the token the service was given", err)
	}
	return infra("the failpoint control endpoint "+t.controlAddr+" refused this run's token", "another process may serve that address, or the service's command.env overrides "+inject.TokenEnv, err)
}

func (t *target) probe(ctx context.Context, url string, status int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if r := redirected(resp); r != "" && resp.StatusCode != status {
		return fmt.Errorf("GET %s: %s (give target.ready.path the final path)", url, r)
	}
	if resp.StatusCode != status {
		return fmt.Errorf("GET %s: %s, want %d", url, resp.Status, status)
	}
	return nil
}

// hits reads the target's fault-hit report; ok is false when the target
// does not serve one.
func (t *target) hits(ctx context.Context) (rep inject.HitsReport, ok bool, err error) {
	if t.hitsURL == "" {
		return rep, false, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.hitsURL, nil)
	if err != nil {
		return rep, false, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return rep, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return rep, false, nil
	}
	if r := redirected(resp); r != "" {
		return rep, false, fmt.Errorf("GET %s: %s", t.hitsURL, r)
	}
	if resp.StatusCode != http.StatusOK {
		return rep, false, fmt.Errorf("GET %s: %s", t.hitsURL, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&rep); err != nil {
		return rep, false, fmt.Errorf("GET %s: %w", t.hitsURL, err)
	}
	return rep, true, nil
}
