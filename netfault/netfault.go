// Package netfault puts network faults between a service and its
// dependencies, with no change to either: TCP proxies run in-process on
// loopback, built on the library of Shopify/toxiproxy v2 (its proxy and its
// toxics, without its HTTP API), and faults are switched on and off while
// traffic flows.
//
//	proxies := netfault.New(netfault.Options{})
//	defer proxies.Close()
//	addr, err := proxies.Start(netfault.Proxy{Name: "postgres", Upstream: "127.0.0.1:5432"})
//	// point the service at addr, then, phase by phase:
//	fault := netfault.Fault{Proxy: "postgres", Kind: netfault.Latency, Latency: 300 * time.Millisecond, Jitter: 50 * time.Millisecond}
//	err = proxies.Enable(fault)  // "proxy postgres latency 300ms ±50ms"
//	err = proxies.Disable(fault)
//
// A Fault and a Proxy are plain data with a Validate method whose errors
// name the setting at fault (FieldError), so a scenario loader can point
// at its line. A proxy listens on loopback only; its upstream is on
// loopback, or on a host the caller allows (Options.AllowHosts), which is
// resolved and checked before toxiproxy is given its address.
//
// Close switches every fault off, stops every proxy and returns once every
// goroutine the proxies started has ended: toxiproxy keeps no count of its
// goroutines, so each is started under a pprof label of its Proxies and
// Close waits until the goroutine profile shows none with that label.
//
// toxiproxy logs through zerolog; Options.Log receives its warnings and
// errors, and nothing is logged without it. toxiproxy's bandwidth toxic
// writes to zerolog's global logger (github.com/rs/zerolog/log.Logger)
// instead, a trace line each time it is interrupted: importing netfault
// sets that logger to warnings and above, which a program using it can
// undo.
package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	zerologlog "github.com/rs/zerolog/log"

	"github.com/chaoskit/chaoskit/inject/dist"
	"github.com/chaoskit/chaoskit/internal/reach"
)

func init() {
	// Set before any toxic runs, so no goroutine reads it meanwhile.
	zerologlog.Logger = zerologlog.Logger.Level(zerolog.WarnLevel)
}

// Proxy is one proxy to start: plain data, as a scenario gives it.
type Proxy struct {
	// Name names the proxy in faults and reports.
	Name string `json:"name" yaml:"name"`
	// Listen is the loopback address to listen on; port 0, or an empty
	// Listen (127.0.0.1:0), picks a free port, which Start returns.
	Listen string `json:"listen,omitempty" yaml:"listen,omitempty"`
	// Upstream is the address of the dependency: on loopback, or on a
	// host Options.AllowHosts allows.
	Upstream string `json:"upstream" yaml:"upstream"`
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Validate reports the first setting of p that cannot work, as a
// *FieldError, or nil. Its upstream must be on loopback.
func (p Proxy) Validate() error { return p.ValidateFor(nil) }

// ValidateFor is Validate with an upstream allowed on loopback or on one
// of allowHosts: host names, IP addresses or CIDR prefixes.
func (p Proxy) ValidateFor(allowHosts []string) error {
	allow, err := reach.New(allowHosts)
	if err != nil {
		return fieldError("upstream", "host names, IP addresses or CIDR prefixes", "allowed hosts: %v", err)
	}
	if !validName.MatchString(p.Name) {
		return fieldError("name", "letters, digits, '_', '.' and '-', such as postgres", "proxy name %q cannot be used", p.Name)
	}
	if p.Listen != "" {
		if err := checkAddr("listen", p.Listen, true, nil); err != nil {
			return err
		}
	}
	return checkAddr("upstream", p.Upstream, false, allow)
}

// loopbackLiteral returns addr with the host localhost (any case, with or
// without the trailing dot) written as 127.0.0.1.
func loopbackLiteral(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// checkAddr checks that addr is host:port on a loopback host or a host
// allow allows.
func checkAddr(field, addr string, portZero bool, allow *reach.Policy) error {
	example := "such as 127.0.0.1:5432"
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fieldError(field, "host:port, "+example, "%q is not an address: %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || (n == 0 && !portZero) {
		return fieldError(field, "a port from 1 to 65535, "+example, "%q has no usable port", addr)
	}
	if !allow.AllowsHost(host) {
		return fieldError(field, "127.0.0.1, ::1 or localhost: netfault proxies traffic on this machine's loopback, and to an upstream beyond it only on a host allowed by consent",
			"%q is not a loopback address", addr)
	}
	return nil
}

// Options configures a set of proxies. The zero value is usable.
//
// Log receives toxiproxy's warnings and errors, as zerolog JSON lines. Nil
// means they are dropped.
//
// CloseTimeout bounds how long Close waits for the proxies' goroutines to
// end. Zero or less means 10 s.
//
// AllowHosts are the hosts beyond loopback an upstream may be on: host
// names, IP addresses or CIDR prefixes (the caller's consent). A name is
// resolved when its proxy starts, and toxiproxy is given the address it
// resolved to, checked against the same list. Empty means loopback only.
type Options struct {
	Log          io.Writer
	CloseTimeout time.Duration
	AllowHosts   []string
}

// Proxies is a set of running proxies and the faults on them. Make one
// with New and end it with Close; it is safe for concurrent use.
type Proxies struct {
	server       *toxiproxy.ApiServer
	log          zerolog.Logger
	label        string // the pprof label value of every goroutine it starts
	closeTimeout time.Duration
	// allowHosts, allow and allowErr are Options.AllowHosts, as given and
	// as a policy (or the error that made none).
	allowHosts []string
	allow      *reach.Policy
	allowErr   error

	mu      sync.Mutex
	proxies map[string]*running
	closed  bool
}

// running is a started proxy and its faults.
type running struct {
	spec   Proxy
	proxy  *toxiproxy.Proxy
	faults map[string]Fault // by toxic name; "down" for Down
}

// labelKey is the pprof label that marks the goroutines of a Proxies.
const labelKey = "chaoskit-netfault"

var instances atomic.Uint64

// New returns an empty set of proxies.
func New(opts Options) *Proxies {
	log := zerolog.Nop()
	if opts.Log != nil {
		log = zerolog.New(opts.Log).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = 10 * time.Second
	}
	allow, allowErr := reach.New(opts.AllowHosts)
	return &Proxies{
		allowHosts:   opts.AllowHosts,
		allow:        allow,
		allowErr:     allowErr,
		server:       toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), log),
		log:          log,
		label:        strconv.FormatUint(instances.Add(1), 10),
		closeTimeout: opts.CloseTimeout,
		proxies:      make(map[string]*running),
	}
}

// ErrClosed is returned by the methods of a closed Proxies.
var ErrClosed = errors.New("netfault: proxies closed")

// do runs f, a call into toxiproxy, under the label that marks the
// goroutines it starts (they inherit it), with toxiproxy's logger in ctx.
func (ps *Proxies) do(f func(ctx context.Context)) {
	pprof.Do(ps.log.WithContext(context.Background()), pprof.Labels(labelKey, ps.label), f)
}

// Start validates p and starts it, and returns the address it listens on
// (the port chosen when p.Listen asks for port 0).
func (ps *Proxies) Start(p Proxy) (string, error) {
	if ps.allowErr != nil {
		return "", fmt.Errorf("proxy %q: allowed hosts: %w", p.Name, ps.allowErr)
	}
	if err := p.ValidateFor(ps.allowHosts); err != nil {
		return "", fmt.Errorf("proxy %q: %w", p.Name, err)
	}
	if p.Listen == "" {
		p.Listen = "127.0.0.1:0"
	}
	// toxiproxy resolves names and dials its upstream plainly: localhost
	// is made 127.0.0.1 here, so that no resolver (a hosts file, DNS) is
	// asked where it is, and an allowed name is resolved here, once, and
	// toxiproxy given an address the policy allows.
	p.Listen = loopbackLiteral(p.Listen)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	addrs, err := ps.allow.Resolve(ctx, p.Upstream)
	cancel()
	if err != nil {
		return "", fmt.Errorf("proxy %q: upstream %s: %w", p.Name, p.Upstream, err)
	}
	p.Upstream = addrs[0]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return "", ErrClosed
	}
	if _, ok := ps.proxies[p.Name]; ok {
		return "", fmt.Errorf("proxy %q: %w", p.Name, fieldError("name", "give each proxy its own name", "a proxy named %q is already running", p.Name))
	}
	tp := toxiproxy.NewProxy(ps.server, p.Name, p.Listen, p.Upstream)
	ps.do(func(context.Context) { err = tp.Start() })
	if err != nil {
		return "", fmt.Errorf("proxy %q: listen on %s: %w", p.Name, p.Listen, err)
	}
	ps.proxies[p.Name] = &running{spec: p, proxy: tp, faults: make(map[string]Fault)}
	return tp.Listen, nil
}

// Addr returns the address proxy name listens on.
func (ps *Proxies) Addr(name string) (string, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, ok := ps.proxies[name]
	if !ok {
		return "", false
	}
	return r.proxy.Listen, true
}

// find returns the running proxy f is on. ps.mu is held.
func (ps *Proxies) find(f Fault) (*running, error) {
	if ps.closed {
		return nil, ErrClosed
	}
	r, ok := ps.proxies[f.Proxy]
	if !ok {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range ps.proxies {
				if !yield(n) {
					return
				}
			}
		})
		return nil, fieldError("proxy", "one of: "+strings.Join(names, ", "), "no proxy named %q", f.Proxy)
	}
	return r, nil
}

// key is f's place among its proxy's faults.
func (f Fault) key() string {
	if f.Kind == Down {
		return string(Down)
	}
	return f.toxicName()
}

// Enable validates f and switches it on, on the connections open now and
// those to come. A proxy has at most one fault of each kind and direction
// at a time.
func (ps *Proxies) Enable(f Fault) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("fault %s: %w", f.Kind, err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, err := ps.find(f)
	if err != nil {
		return fmt.Errorf("fault %s: %w", f, err)
	}
	if on, ok := r.faults[f.key()]; ok {
		return fmt.Errorf("fault %s: %s is on already; switch it off first", f, on)
	}
	if f.Kind == Down {
		ps.do(func(context.Context) { r.proxy.Stop() })
		r.faults[f.key()] = f
		return nil
	}
	toxicity := f.Probability
	if toxicity == 0 {
		toxicity = 1
	}
	typ, attrs := string(f.Kind), f.attributes()
	if f.Kind == Latency && f.Distribution != "" {
		rec := ps.recorder(f)
		typ, attrs = distToxicType, map[string]any{"dist": f.Distribution, "recorder": rec}
	}
	body, err := json.Marshal(map[string]any{
		"name": f.toxicName(), "type": typ, "stream": string(f.direction()),
		"toxicity": toxicity, "attributes": attrs,
	})
	if err != nil {
		return err
	}
	ps.do(func(context.Context) { _, err = r.proxy.Toxics.AddToxicJson(bytes.NewReader(body)) })
	if err != nil {
		return fmt.Errorf("fault %s: %w", f, err)
	}
	r.faults[f.key()] = f
	return nil
}

// recorder makes the recorder of the delays f applies, replacing any an
// earlier fault of its proxy, kind and direction left, and returns its name.
func (ps *Proxies) recorder(f Fault) string {
	name := ps.label + "/" + f.Proxy + "/" + f.toxicName()
	recorders.Store(name, new(dist.Recorder))
	return name
}

// Delays returns the recorder of the delays the latency fault with a
// Distribution on f's proxy, kind and direction applied to each chunk
// since it was last switched on, or nil when none was: what the fault did,
// to check against what it was given.
func (ps *Proxies) Delays(f Fault) *dist.Recorder {
	if r, ok := recorders.Load(ps.label + "/" + f.Proxy + "/" + f.toxicName()); ok {
		return r.(*dist.Recorder)
	}
	return nil
}

// Disable switches f off (a fault of f's proxy, kind and direction; its
// other settings do not matter). Switching off a fault that is not on does
// nothing, so a rollback can switch off everything it may have switched on.
// Down comes back up on the same address.
func (ps *Proxies) Disable(f Fault) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, err := ps.find(f)
	if err != nil {
		return fmt.Errorf("fault %s: %w", f, err)
	}
	if _, ok := r.faults[f.key()]; !ok {
		return nil
	}
	if f.Kind == Down {
		ps.do(func(context.Context) { err = r.proxy.Start() })
		if err != nil {
			// Still down: a later Disable may bring it back.
			return fmt.Errorf("fault %s: bring the proxy back on %s: %w", f, r.proxy.Listen, err)
		}
		delete(r.faults, f.key())
		return nil
	}
	delete(r.faults, f.key())
	ps.do(func(ctx context.Context) { err = r.proxy.Toxics.RemoveToxic(ctx, f.toxicName()) })
	if err != nil {
		return fmt.Errorf("fault %s: %w", f, err)
	}
	return nil
}

// Active returns the faults on now, by proxy and then in the order of
// Kinds and direction.
func (ps *Proxies) Active() []Fault {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []Fault
	for _, r := range ps.proxies {
		for _, f := range r.faults {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Fault) int {
		if c := strings.Compare(a.Proxy, b.Proxy); c != 0 {
			return c
		}
		if c := slices.Index(Kinds, a.Kind) - slices.Index(Kinds, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(string(a.direction()), string(b.direction()))
	})
	return out
}

// Close switches every fault off, stops every proxy, closing their
// connections, and returns once every goroutine they started has ended,
// or with an error after Options.CloseTimeout. Later calls return nil.
func (ps *Proxies) Close() error {
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return nil
	}
	ps.closed = true
	recorders.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), ps.label+"/") {
			recorders.Delete(k)
		}
		return true
	})
	proxies := ps.proxies
	ps.proxies = nil
	ps.mu.Unlock()
	for _, r := range proxies {
		// Toxics first, while the connections are up: taking a toxic out
		// hands on the data it holds, so none is left blocked on a
		// connection that closes under it.
		ps.do(func(ctx context.Context) {
			r.proxy.Toxics.ResetToxics(ctx)
			r.proxy.Stop()
		})
	}
	return ps.waitGoroutines()
}

// waitGoroutines waits until no goroutine carries ps's label.
func (ps *Proxies) waitGoroutines() error {
	deadline := time.Now().Add(ps.closeTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		n := labelled(ps.label)
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netfault: %d proxy goroutines still running %v after Close", n, ps.closeTimeout)
		}
		time.Sleep(wait)
	}
}

// labelled counts the goroutines whose pprof labels include labelKey=value,
// from the goroutine profile (debug=1 groups goroutines with the same stack
// and labels: "N @ pcs" then "# labels: {...}").
func labelled(value string) int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	want := strconv.Quote(labelKey) + ":" + strconv.Quote(value)
	n, count := 0, 0
	for line := range strings.Lines(b.String()) {
		if c, _, ok := strings.Cut(line, " @ "); ok {
			count, _ = strconv.Atoi(c)
			continue
		}
		if strings.HasPrefix(line, "# labels: ") && strings.Contains(line, want) {
			n += count
		}
	}
	return n
}
