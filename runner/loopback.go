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

	"github.com/chaoskit/chaoskit/internal/reach"
)

// chaoskit connects to the machine it runs on, and beyond it only to the
// hosts a scenario's allow_hosts and the command's --allow-host both name
// (plan.Scenario.Reach, a reach.Policy): the load, readiness probes, state
// samples, fault-hit reads, the failpoint control endpoint, probes,
// rollback (whose address comes from a file a user can edit) and the
// catalog lookup of a running service all dial through the policy's
// dialer, follow no redirect, and use no proxy from the environment.
// Servers chaoskit starts itself (the target, dependencies) are dialled on
// loopback only.

// errNotLoopback is what the dialer answers for any address it refuses.
var errNotLoopback = reach.ErrRefused

// loopbackOnly refuses connections to non-loopback addresses, whatever a
// name resolved to: the last guard, at connect time.
func loopbackOnly(network, address string, c syscall.RawConn) error {
	return (*reach.Policy)(nil).Control(network, address, c)
}

// dialLoopback dials through d only addresses on loopback: a loopback IP,
// or localhost, which is dialled as 127.0.0.1 and then ::1 without asking
// a resolver (a DNS query is traffic off the machine too). Any other name
// is refused unresolved.
func dialLoopback(d *net.Dialer) func(ctx context.Context, network, address string) (net.Conn, error) {
	return (*reach.Policy)(nil).Dial(d)
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
// service: loopback and the hosts allow allows only (nil: loopback only;
// see reach.Policy.Dial), no proxy, each request bounded by timeout. A
// redirect is not followed: the client returns it as the response, so the
// caller sees the 3xx and where it pointed.
func ControlClient(timeout time.Duration, allow *reach.Policy) *http.Client {
	return controlClientTLS(timeout, allow, nil)
}

// targetClient is ControlClient speaking TLS to the target as target.tls
// says: the requests of chaoskit's own to the target (readiness, samples,
// setup steps, probes, read-backs).
func (r *run) targetClient(timeout time.Duration) *http.Client {
	return controlClientTLS(timeout, r.sc.Reach, r.tls.config)
}

// controlClientTLS is ControlClient with a TLS configuration for https://
// URLs (nil: the default one, the system's roots).
func controlClientTLS(timeout time.Duration, allow *reach.Policy, cfg *tls.Config) *http.Client {
	d := &net.Dialer{Timeout: timeout}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         allow.Dial(d),
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

// checkControlAddr refuses a control endpoint address that is neither on
// loopback nor on a host allow allows before anything is sent to it: a
// fault record is a file, and one edited by hand must not make rollback
// reach another machine. The record cannot grant consent: only the
// command's (rollback --allow-host) or the run's own policy can.
func checkControlAddr(addr string, allow *reach.Policy) error {
	u, err := url.Parse(normalizeURL(addr))
	if err != nil || u.Host == "" {
		return fmt.Errorf("control endpoint %q is not a URL", addr)
	}
	if err := allow.Check(u.Host); err != nil {
		return fmt.Errorf("control endpoint %s: %w", addr, err)
	}
	return nil
}
