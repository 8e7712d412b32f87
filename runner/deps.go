package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/internal/pgbin"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// dependency is a process of the scenario's dependencies that chaoskit
// started.
type dependency struct {
	name    string
	spec    plan.Dependency // with its placeholders filled
	managed *managed
	// data is its data directory; outside is set when that directory had
	// to be made outside the run directory (see dataDir), to be removed
	// at the end.
	data    string
	outside string
	creds   *syscall.Credential
	// base is the directory of the dependencies' output, deps/ of the
	// run directory.
	base string
	// password is {password:NAME}.
	password string
	// segments are the System V segments of the Postgres servers it ran,
	// recorded for a later run to remove should this one be killed.
	segments []pgbin.Segment
	// port is {port:NAME}.
	port int
	// allow is where its ready.tcp may be: loopback, or a host the
	// scenario's Reach allows. Its own port is on loopback always.
	allow *reach.Policy
}

// allocatePorts picks a free loopback port for every port placeholder of
// the scenario, so that the target, the dependencies and the proxies
// agree on them.
func (r *run) allocatePorts() error {
	r.ports = map[string]int{}
	for _, n := range r.sc.PortNames() {
		p, err := freePort()
		if err != nil {
			return infra("no free loopback port", "", err)
		}
		r.ports[n] = p
	}
	r.passwords = map[string]string{}
	for _, d := range r.sc.Dependencies {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return infra("cannot make a password", "", err)
		}
		r.passwords[d.Name] = hex.EncodeToString(b)
	}
	return nil
}

// passwordEnv hands the target the run's passwords (see
// plan.PasswordEnv).
func (r *run) passwordEnv() []string {
	var env []string
	for name, pw := range r.passwords {
		env = append(env, plan.PasswordEnv(name)+"="+pw)
	}
	sort.Strings(env)
	return env
}

// masked returns argv with the run's passwords written as their
// placeholders, for the record.
func (r *run) masked(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		for name, pw := range r.passwords {
			a = strings.ReplaceAll(a, pw, "{password:"+name+"}")
		}
		out[i] = a
	}
	return out
}

// sharedPort says whether a port placeholder is a dependency's or a
// proxy's, or is used by one: one the target must not pick again when it
// is retried on new ports.
func (r *run) sharedPort(name string) bool {
	for _, d := range r.sc.Dependencies {
		if d.Name == name {
			return true
		}
	}
	for _, p := range r.sc.Proxies {
		if p.Name == name {
			return true
		}
	}
	return false
}

// startDeps starts the scenario's dependencies in order, each ready before
// the next starts.
func (r *run) startDeps(ctx context.Context) error {
	if len(r.sc.Dependencies) == 0 {
		return nil
	}
	for _, d := range r.sc.Dependencies {
		if d.Postgres != nil {
			// Refused before anything starts, not after a readiness wait.
			if _, err := managedClients(); err != nil {
				return err
			}
		}
	}
	sweepOutside("chaoskit-dep-")
	if n := pgbin.Sweep(); n > 0 {
		fmt.Fprintf(r.opts.Log, "  note: removed %d shared memory segments of Postgres servers that an earlier, killed chaoskit started\n", n)
	}
	// Absolute: a dependency runs in a directory of its own, and is told
	// where its data is.
	base, err := filepath.Abs(filepath.Join(r.dir, DepsDir))
	if err != nil {
		return infra("cannot find the run directory", "", err)
	}
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return infra("cannot create "+base, "", err)
	}
	// deps/ is removed with an earlier run's files; anything else there
	// now, a link above all, is not chaoskit's to write through.
	if st, err := os.Lstat(base); err != nil || !st.IsDir() {
		return infra("will not write the dependencies' data into "+base+": it is not a directory chaoskit made", "remove it", err)
	}
	for _, spec := range r.sc.Dependencies {
		d := &dependency{name: spec.Name, port: r.ports[spec.Name], allow: r.sc.Reach}
		r.deps = append(r.deps, d)
		if err := r.startDep(ctx, d, spec, base); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) startDep(ctx context.Context, d *dependency, spec plan.Dependency, base string) error {
	if spec.RunAs != "" && os.Geteuid() == 0 {
		creds, err := credentialOf(spec.RunAs)
		if err != nil {
			return infra(fmt.Sprintf("dependency %s: cannot run as %s", spec.Name, spec.RunAs), "create the user, or remove run_as", err)
		}
		d.creds = creds
	}
	data, outside, err := dataDir(base, spec.Name, d.creds)
	if err != nil {
		return infra(fmt.Sprintf("dependency %s: cannot make its data directory", spec.Name), "", err)
	}
	d.data, d.outside = data, outside
	if outside != "" {
		fmt.Fprintf(r.opts.Log, "  note: %s cannot reach the run directory, so dependency %s keeps its data in %s (removed at the end)\n", spec.RunAs, spec.Name, outside)
	}
	d.spec = spec.WithPorts(r.ports, data).WithPasswords(r.passwords)
	d.password = r.passwords[spec.Name]
	d.base = base
	if err := checkDepPorts(spec, d); err != nil {
		return err
	}
	stdout, stderr := filepath.Join(base, spec.Name+".stdout"), filepath.Join(base, spec.Name+".stderr")
	argv, env, dir := []string(nil), []string(nil), base
	stopSignal := syscall.SIGTERM
	switch {
	case d.spec.Postgres != nil:
		bin := pgbin.Dir()
		if bin == "" {
			return infra(fmt.Sprintf("dependency %s: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin)", spec.Name), "install it: apt-get install postgresql", nil)
		}
		if err := r.initdb(ctx, d, filepath.Join(bin, "initdb"), stdout, stderr); err != nil {
			return err
		}
		argv = append([]string{filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(r.ports[spec.Name]),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
			// A killed server keeps every committed transaction without
			// fsync: a commit waits for its WAL to reach the kernel, whose
			// page cache outlives the process. Only a machine crash loses
			// data, and a scenario does not crash the machine.
			"-c", "fsync=off", "-c", "full_page_writes=off",
			// Dynamic shared memory in files of the data directory, not
			// in /dev/shm, where a killed server would leave it.
			"-c", "dynamic_shared_memory_type=mmap"}, d.spec.Postgres.Args...)
		// SIGINT is postgres's fast shutdown: sessions end at once.
		stopSignal = syscall.SIGINT
	default:
		c := d.spec.Command
		argv0, err := resolveProgram(c.Argv[0], c.Dir)
		if err != nil {
			return infra(fmt.Sprintf("cannot start dependency %s: %v", spec.Name, err), "install it or fix dependencies["+spec.Name+"].command.argv", nil)
		}
		argv, dir = append([]string{argv0}, c.Argv[1:]...), c.Dir
		env = append(env, r.scratchEnv()...)
		keys := make([]string, 0, len(c.Env))
		for k := range c.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+c.Env[k])
		}
	}
	first := true
	start := func(ctx context.Context) (*process, error) {
		opts := startOptions{Append: !first || d.spec.Postgres != nil, Credential: d.creds}
		if d.spec.Postgres != nil {
			// Should chaoskit die, the supervisor stops Postgres by its
			// own signal, which releases its shared memory.
			opts.StopSignal, opts.StopGrace = stopSignal, spec.StopGrace.D()
		}
		p, err := startProcessWith(argv, env, dir, stdout, stderr, opts)
		first = false
		if err != nil {
			return nil, err
		}
		r.event(processEvent("started", map[string]any{"process": spec.Name, "pid": p.pid(), "argv": r.masked(argv)}))
		if err := r.depReady(ctx, d, p); err != nil {
			p.stopWith(stopSignal, time.Second)
			return nil, err
		}
		if d.spec.Postgres != nil {
			if seg, err := pgbin.SegmentOf(d.data); err == nil && pgbin.Record(seg) == nil {
				d.segments = append(d.segments, seg)
			}
		}
		return p, nil
	}
	p, err := start(ctx)
	if err != nil {
		var ie *InfraError
		if errors.As(err, &ie) || ctx.Err() != nil {
			return err
		}
		return infra(fmt.Sprintf("cannot start dependency %s", spec.Name), "fix dependencies["+spec.Name+"]", err)
	}
	d.managed = newManaged(spec.Name, p, spec.StopGrace.D(), start)
	d.managed.stopSignal = stopSignal
	return nil
}

// initdb creates a Postgres dependency's database cluster.
func (r *run) initdb(ctx context.Context, d *dependency, initdb, stdout, stderr string) error {
	// The superuser's password, the run's {password:NAME}, reaches
	// initdb in a file only its user can read, removed when it is done.
	pwfile := filepath.Join(filepath.Dir(d.data), "."+d.name+".pw")
	if err := writePrivate(pwfile, d.password+"\n", d.creds); err != nil {
		return infra(fmt.Sprintf("dependency %s: cannot write its password file", d.name), "", err)
	}
	defer os.Remove(pwfile)
	argv := []string{initdb, "-D", d.data, "-U", "postgres", "--auth=scram-sha-256", "--pwfile=" + pwfile, "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"}
	p, err := startProcessWith(argv, nil, filepath.Dir(d.data), stdout, stderr, startOptions{Credential: d.creds})
	if err != nil {
		return infra(fmt.Sprintf("dependency %s: cannot run initdb", d.name), "", err)
	}
	t := time.NewTimer(d.spec.Ready.Timeout.D())
	defer t.Stop()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	case <-t.C:
		p.kill()
		return infra(fmt.Sprintf("dependency %s: initdb did not finish within %v", d.name, d.spec.Ready.Timeout.D()), "", nil)
	}
	if p.err != nil {
		return infra(fmt.Sprintf("dependency %s: initdb failed (%v); its last output: %s", d.name, p.err, lastLinesOf(p.output.String(), 5)),
			"see deps/"+d.name+".stderr in the run directory", nil)
	}
	return nil
}

// depReadyPoll is how often a dependency's readiness is checked.
const depReadyPoll = 50 * time.Millisecond

// depReady waits until the dependency passes its readiness check, exits,
// or its timeout passes; the error of the last two carries the last lines
// of its output.
func (r *run) depReady(ctx context.Context, d *dependency, p *process) error {
	timeout := d.spec.Ready.Timeout.D()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(depReadyPoll)
	defer tick.Stop()
	for {
		last := d.check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return infra(fmt.Sprintf("dependency %s exited before it was ready (%s); its last output: %s", d.name, p.endedWith(), lastLinesOf(p.output.String(), 5)),
				"see deps/"+d.name+".stderr in the run directory", nil)
		case <-deadline.C:
			return infra(fmt.Sprintf("dependency %s was not ready within %v: %v; its last output: %s", d.name, timeout, last, lastLinesOf(p.output.String(), 5)),
				"check dependencies["+d.name+"].ready and its output in deps/ of the run directory", nil)
		case <-tick.C:
		}
	}
}

// check runs the dependency's readiness check once.
func (d *dependency) check(ctx context.Context) error {
	rd := d.spec.Ready
	switch {
	case len(rd.Command) > 0:
		return d.readyCommand(ctx)
	case rd.TCP != "":
		return dialOnce(ctx, hostPort(rd.TCP), d.allow)
	case d.spec.Postgres != nil:
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := managedClients()
		if err != nil {
			return err
		}
		return c.PostgresPing(cctx, "postgres://postgres:"+url.QueryEscape(d.password)+"@"+d.ownAddr()+"/postgres?sslmode=disable&connect_timeout=1")
	}
	return dialOnce(ctx, d.ownAddr(), nil)
}

// readyCommandTimeout bounds one run of a readiness command.
const readyCommandTimeout = 5 * time.Second

// readyCommand runs the readiness command once, below a supervisor as
// every process chaoskit starts (see supervisorEnv): whatever it starts
// is killed with it, also when chaoskit itself is killed. Its output goes
// to deps/NAME.ready.stdout and .stderr.
func (d *dependency) readyCommand(ctx context.Context) error {
	rd := d.spec.Ready
	dir := "."
	if d.spec.Command != nil && d.spec.Command.Dir != "" {
		dir = d.spec.Command.Dir
	}
	argv0, err := resolveProgram(rd.Command[0], dir)
	if err != nil {
		return fmt.Errorf("ready command %s: %v", rd.Command[0], err)
	}
	argv := append([]string{argv0}, rd.Command[1:]...)
	out := filepath.Join(d.base, d.name+".ready")
	p, err := startProcessWith(argv, nil, dir, out+".stdout", out+".stderr", startOptions{})
	if err != nil {
		return fmt.Errorf("ready command %s: %v", strings.Join(rd.Command, " "), err)
	}
	t := time.NewTimer(readyCommandTimeout)
	defer t.Stop()
	select {
	case <-p.done:
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	case <-t.C:
		p.kill()
		return fmt.Errorf("ready command %s did not finish within %v", strings.Join(rd.Command, " "), readyCommandTimeout)
	}
	if p.err != nil {
		return fmt.Errorf("ready command %s: %v %s", strings.Join(rd.Command, " "), p.err, strings.TrimSpace(lastLinesOf(p.output.String(), 2)))
	}
	return nil
}

// checkDepPorts refuses to start a dependency whose readiness address
// is a fixed port (one the scenario wrote, not {port:NAME}) that
// something already accepts connections on, or whose own port was taken
// since chaoskit chose it: readiness would pass on the foreign listener,
// and proxy faults would disturb it while the traffic went elsewhere.
func checkDepPorts(orig plan.Dependency, d *dependency) error {
	type fixed struct{ addr, field string }
	var addrs []fixed
	if orig.Ready.TCP != "" && orig.Ready.TCP == d.spec.Ready.TCP {
		addrs = append(addrs, fixed{hostPort(d.spec.Ready.TCP), "ready.tcp"})
	}
	if d.port != 0 {
		addrs = append(addrs, fixed{d.ownAddr(), "{port:" + d.name + "}"})
	}
	for _, a := range addrs {
		if dialOnce(context.Background(), a.addr, d.allow) == nil {
			return infra(fmt.Sprintf("dependency %s: port %s (%s) is already in use by another process", d.name, a.addr, a.field),
				"stop what listens there, or use {port:"+d.name+"} in the dependency's command and ready.tcp so chaoskit picks a free port", nil)
		}
	}
	return nil
}

// ownAddr is 127.0.0.1:{port:NAME}.
func (d *dependency) ownAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(d.port)) }

// dialOnce connects to addr, on loopback or a host allow allows, and
// closes the connection.
func dialOnce(ctx context.Context, addr string, allow *reach.Policy) error {
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	c, err := allow.Dial(&net.Dialer{})(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// stopDeps stops the dependencies, the last started first, each with its
// stop signal and then SIGKILL after its grace, and removes the data
// directories made outside the run directory.
func (r *run) stopDeps(ctx context.Context) {
	for i := len(r.deps) - 1; i >= 0; i-- {
		d := r.deps[i]
		if d.managed != nil {
			d.managed.resume()
			p, _, _ := d.managed.current()
			if !p.exited() {
				grace := d.spec.StopGrace.D()
				if ctx.Err() != nil {
					grace = min(grace, interruptedGrace)
				}
				st := p.stopTimed(d.managed.stopSignal, grace)
				msg := "stopped"
				if st.killed {
					msg = "killed"
				}
				r.event(processEvent(msg, st.data(d.name, map[string]any{"pid": p.pid(), timeline.StopAtEnd: true})))
			}
		}
		if d.managed != nil {
			if p, _, _ := d.managed.current(); p.exited() {
				for _, seg := range d.segments {
					pgbin.Release(seg)
				}
			}
		}
		if d.outside != "" {
			_ = os.RemoveAll(d.outside)
		}
	}
}

// writePrivate writes text to a new file at path that only its owner
// (creds' user, when given) can read; a file or link already there makes
// it fail.
func writePrivate(path, text string, creds *syscall.Credential) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if creds != nil {
		if err := f.Chown(int(creds.Uid), int(creds.Gid)); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// credentialOf returns the user and group ids of a user name.
func credentialOf(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s has ids %s:%s", name, u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// dataDir makes a dependency's data directory, deps/NAME in the run
// directory, handed to creds' user when given. That user must be able to
// reach it: the run directory and deps/, which chaoskit made, are opened
// for traversal (never for reading), and if a directory above them is
// closed to others (a run directory under /root), the data goes to a new
// directory in the system's temporary directory instead, returned as
// outside.
func dataDir(base, name string, creds *syscall.Credential) (data, outside string, err error) {
	data = filepath.Join(base, name)
	if err := os.RemoveAll(data); err != nil {
		return "", "", err
	}
	if creds != nil {
		for _, dir := range []string{base, filepath.Dir(base)} {
			if fi, err := os.Stat(dir); err == nil {
				_ = os.Chmod(dir, fi.Mode().Perm()|0o011)
			}
		}
		if !traversable(filepath.Dir(filepath.Dir(base))) {
			if outside, err = os.MkdirTemp("", outsidePrefix(os.Getpid())+name+"-"); err != nil {
				return "", "", err
			}
			if err := os.Chmod(outside, 0o711); err != nil {
				return "", "", err
			}
			data = filepath.Join(outside, "data")
		}
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		return "", outside, err
	}
	if creds != nil {
		if err := os.Chown(data, int(creds.Uid), int(creds.Gid)); err != nil {
			return "", outside, err
		}
	}
	return data, outside, nil
}

// outsidePrefix starts the name of a data directory made outside the run
// directory by chaoskit process pid: a chaoskit killed with SIGKILL cannot
// remove it, so the next run with dependencies removes those whose
// process is gone (sweepOutside).
func outsidePrefix(pid int) string { return "chaoskit-dep-" + strconv.Itoa(pid) + "-" }

// sweepOutside removes the directories named prefix+PID-… that chaoskit
// processes now gone made outside their run directories.
func sweepOutside(prefix string) {
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // not one of chaoskit's, or its process is alive
		}
		_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
	}
}

// traversable reports whether every directory from dir up to / may be
// searched by any user.
func traversable(dir string) bool {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// lastLinesOf returns the last n lines of a process's output on one line,
// for an error message, or "(none)".
func lastLinesOf(s string, n int) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "(none)"
	}
	return lastLines(s, n)
}
