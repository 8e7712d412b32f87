package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// chaoskit connects to the machine it runs on and nowhere else: the load,
// readiness probes, state samples, fault-hit reads, the failpoint control
// endpoint, rollback (whose address comes from a file a user can edit) and
// the catalog lookup of a running service all dial through dialLoopback,
// follow no redirect, and use no proxy from the environment.

// errNotLoopback is what the dialer answers for any address that is not
// loopback.
var errNotLoopback = errors.New("chaoskit connects to loopback addresses only")

// loopbackOnly refuses connections to non-loopback addresses, whatever a
// name resolved to: the last guard, at connect time.
func loopbackOnly(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %s", errNotLoopback, host)
	}
	return nil
}

// dialLoopback dials through d only addresses on loopback: a loopback IP,
// or localhost, which is dialled as 127.0.0.1 and then ::1 without asking
// a resolver (a DNS query is traffic off the machine too). Any other name
// is refused unresolved.
func dialLoopback(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		var hosts []string
		switch ip := net.ParseIP(host); {
		case ip != nil && ip.IsLoopback():
			hosts = []string{host}
		case strings.EqualFold(strings.TrimSuffix(host, "."), "localhost"):
			hosts = []string{"127.0.0.1", "::1"}
		default:
			return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%w: %s", errNotLoopback, host)}
		}
		var last error
		for _, h := range hosts {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(h, port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		return nil, last
	}
}

// loopbackLiteral returns host:port with the host localhost written as
// 127.0.0.1, for the calls that would resolve it (a listen).
func loopbackLiteral(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// errRedirect is the error of a control request answered with a redirect.
var errRedirect = errors.New("chaoskit follows no redirects")

// ControlClient returns the HTTP client of chaoskit's control traffic to a
// service: loopback only (see dialLoopback), no proxy, each request bounded
// by timeout. A redirect is not followed: the client returns it as the
// response, so the caller sees the 3xx and where it pointed.
func ControlClient(timeout time.Duration) *http.Client {
	return controlClientTLS(timeout, nil)
}

// targetClient is ControlClient speaking TLS to the target as target.tls
// says: the requests of chaoskit's own to the target (readiness, samples,
// setup steps, probes, read-backs).
func (r *run) targetClient(timeout time.Duration) *http.Client {
	return controlClientTLS(timeout, r.tls.config)
}

// controlClientTLS is ControlClient with a TLS configuration for https://
// URLs (nil: the default one, the system's roots).
func controlClientTLS(timeout time.Duration, cfg *tls.Config) *http.Client {
	d := &net.Dialer{Timeout: timeout, Control: loopbackOnly}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         dialLoopback(d),
			TLSClientConfig:     cfg,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// redirected describes a response that redirects, or returns "".
func redirected(resp *http.Response) string {
	if resp.StatusCode/100 != 3 {
		return ""
	}
	return fmt.Sprintf("%s redirects to %s: %v", resp.Status, resp.Header.Get("Location"), errRedirect)
}

// checkControlAddr refuses a control endpoint address that is not on
// loopback before anything is sent to it: a fault record is a file, and
// one edited by hand must not make rollback reach another machine.
func checkControlAddr(addr string) error {
	u, err := url.Parse(normalizeURL(addr))
	if err != nil || u.Host == "" {
		return fmt.Errorf("control endpoint %q is not a URL", addr)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost") {
		return nil
	}
	return fmt.Errorf("control endpoint %s: %w", addr, errNotLoopback)
}
