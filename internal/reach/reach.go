// Package reach holds chaoskit's one rule of where it sends traffic:
// loopback always, and hosts beyond loopback only by consent. A host is
// consented to when the scenario lists it under allow_hosts and the
// command names it too (--allow-host), as a chaos tool's target allow-list
// asks both the experiment and the operator; a Policy holds the hosts
// both named.
//
// Every check and every dial goes through a Policy: the addresses a
// scenario writes (checked when it loads) and the connections a run makes
// (load, readiness, samples, fault control, probes, proxies' upstreams,
// rollback). A nil Policy is loopback only. The last guard is at connect
// time: the dialer's Control hook refuses any final address that is not
// loopback, an allowed IP, in an allowed prefix, or an address an allowed
// name resolved to, so a name that resolves elsewhere, a redirect or an
// edited record reaches nothing else.
package reach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// ErrRefused is what every refused address wraps.
var ErrRefused = errors.New("chaoskit connects to loopback addresses only")

// refusedConsent is ErrRefused as a policy that allows some hosts says it.
type refusedConsent struct{ host string }

func (e refusedConsent) Error() string {
	return "chaoskit connects to loopback addresses and to the hosts allowed by consent (allow_hosts and --allow-host) only: " + e.host
}

func (e refusedConsent) Is(target error) bool { return target == ErrRefused }

// Policy is a set of hosts beyond loopback that traffic may go to: host
// names, IP addresses and IP prefixes. Its zero value and nil allow
// loopback only. It is safe for concurrent use.
type Policy struct {
	entries []string
	names   map[string]bool
	addrs   map[netip.Addr]bool
	nets    []netip.Prefix

	// lookup resolves an allowed name; nil is the system's resolver.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	mu sync.Mutex
	// resolved are the addresses allowed names resolved to, which the
	// connect-time guard lets through.
	resolved map[netip.Addr]bool
}

// Entry normalizes one allow-list entry: a host name (lower case, without
// a trailing dot), an IP address, or an IP prefix in CIDR notation (its
// masked form). A URL, a host:port or an empty string is an error that
// says what to write instead.
func Entry(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", errors.New("empty host: write a host name, an IP address or a CIDR prefix")
	case strings.Contains(s, "://"):
		return "", fmt.Errorf("%q is a URL: write its host only", s)
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked().String(), nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap().String(), nil
	}
	if _, _, err := net.SplitHostPort(s); err == nil {
		return "", fmt.Errorf("%q has a port: write the host only (every port of an allowed host is allowed)", s)
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if !validName(name) {
		return "", fmt.Errorf("%q is not a host name, an IP address or a CIDR prefix", s)
	}
	return name, nil
}

// validName says whether s is a DNS host name: labels of letters, digits,
// hyphens and underscores, none empty, none longer than 63 characters.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// New returns the policy that allows the given entries (see Entry). No
// entry gives nil: loopback only.
func New(entries []string) (*Policy, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	p := &Policy{names: map[string]bool{}, addrs: map[netip.Addr]bool{}, resolved: map[netip.Addr]bool{}}
	for _, s := range entries {
		e, err := Entry(s)
		if err != nil {
			return nil, err
		}
		if slices.Contains(p.entries, e) {
			continue
		}
		p.entries = append(p.entries, e)
		if pr, err := netip.ParsePrefix(e); err == nil {
			p.nets = append(p.nets, pr)
		} else if a, err := netip.ParseAddr(e); err == nil {
			p.addrs[a] = true
		} else {
			p.names[e] = true
		}
	}
	return p, nil
}

// WithLookup returns p resolving allowed names with lookup instead of the
// system's resolver (for tests, and for a caller with its own resolver).
func (p *Policy) WithLookup(lookup func(ctx context.Context, host string) ([]netip.Addr, error)) *Policy {
	if p != nil {
		p.lookup = lookup
	}
	return p
}

// Hosts returns the allowed entries, normalized, in the order given.
func (p *Policy) Hosts() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.entries)
}

// IsLoopback says whether host is a loopback IP (127.0.0.0/8, ::1) or
// localhost, which chaoskit dials as 127.0.0.1 and ::1 without a resolver.
func IsLoopback(host string) bool {
	if isLocalhost(host) {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	return err == nil && a.Unmap().IsLoopback()
}

func isLocalhost(host string) bool {
	return strings.EqualFold(strings.TrimSuffix(host, "."), "localhost")
}

// AllowsHost says whether traffic may go to host: a loopback host, an
// allowed name, or an IP literal allowed or in an allowed prefix. A name
// is not resolved: only the names listed are allowed.
func (p *Policy) AllowsHost(host string) bool {
	if IsLoopback(host) {
		return true
	}
	if p == nil {
		return false
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return p.allowsAddr(a.Unmap())
	}
	return p.names[strings.ToLower(strings.TrimSuffix(host, "."))]
}

// allowsAddr says whether an address a connection goes to is allowed:
// loopback, listed, in a listed prefix, or one an allowed name resolved
// to.
func (p *Policy) allowsAddr(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	if p == nil {
		return false
	}
	if p.addrs[a] {
		return true
	}
	for _, n := range p.nets {
		if n.Contains(a) {
			return true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resolved[a]
}

// Host returns the host of raw, a URL or host:port.
func Host(raw string) (string, error) {
	s := raw
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%q is not a URL", raw)
	}
	return u.Hostname(), nil
}

// Check fails unless raw (a URL or host:port) names a host p allows.
func (p *Policy) Check(raw string) error {
	host, err := Host(raw)
	if err != nil {
		return err
	}
	if !p.AllowsHost(host) {
		return p.refused(host)
	}
	return nil
}

// refused is the error of a host p does not allow.
func (p *Policy) refused(host string) error {
	if p == nil {
		return fmt.Errorf("%w: %s", ErrRefused, host)
	}
	return refusedConsent{host}
}

// Control is a net.Dialer Control hook that refuses a connection to any
// address p does not allow, whatever name it came from: the last guard,
// at connect time.
func (p *Policy) Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !p.allowsAddr(a) {
		return p.refused(host)
	}
	return nil
}

// Resolve returns the addresses (IP:port) a dial of address goes to,
// tried in order: a loopback or allowed IP as it is; localhost as
// 127.0.0.1 then ::1, without a resolver (a DNS query is traffic off the
// machine too); an allowed name as the addresses it resolves to, each of
// which is then allowed. Any other host is refused unresolved.
func (p *Policy) Resolve(ctx context.Context, address string) ([]string, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if isLocalhost(host) {
		return []string{net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if !p.allowsAddr(a) {
			return nil, p.refused(host)
		}
		return []string{address}, nil
	}
	if !p.AllowsHost(host) {
		return nil, p.refused(host)
	}
	lookup := p.lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s resolves to no address", host)
	}
	out := make([]string, 0, len(addrs))
	p.mu.Lock()
	for _, a := range addrs {
		a = a.Unmap()
		p.resolved[a] = true
		out = append(out, net.JoinHostPort(a.String(), port))
	}
	p.mu.Unlock()
	return out, nil
}

// Dial returns a dial function that connects through d only to the
// addresses p allows (see Resolve), with Control as d's Control hook, so
// that the final address is checked when the connection is made.
func (p *Policy) Dial(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	dd := *d
	dd.Control = p.Control
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		addrs, err := p.Resolve(ctx, address)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		var last error
		for _, a := range addrs {
			c, err := dd.DialContext(ctx, network, a)
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
}
