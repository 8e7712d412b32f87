package plan

import (
	"fmt"
	"strings"

	"github.com/chaoskit/chaoskit/internal/reach"
)

// validateAllowHosts checks allow_hosts and sets the scenario's Reach: the
// entries the command consented to. An entry without that consent is an
// error at the entry, naming the flag to add; a host the command names
// that the scenario does not list allows nothing. Nothing is widened
// silently: the run reaches only what both name.
func (v *validator) validateAllowHosts() {
	sc := v.sc
	flag := map[string]bool{}
	for _, h := range v.opts.AllowHosts {
		if e, err := reach.Entry(h); err == nil {
			flag[e] = true
		}
	}
	var listed, consented []string
	for i, h := range sc.AllowHosts {
		at := fmt.Sprintf("$.allow_hosts[%d]", i)
		e, err := reach.Entry(h)
		switch {
		case err != nil:
			v.errorf(at, "write a host name, an IP address or a CIDR prefix, such as staging.internal or 10.20.0.0/16", "allow_hosts: %v", err)
			continue
		case reach.IsLoopback(e) || isLoopbackPrefix(e):
			v.errorf(at, "remove it: loopback is always allowed", "allow_hosts: %s is loopback", h)
			continue
		}
		listed = append(listed, e)
		switch {
		case flag[e]:
			consented = append(consented, e)
		case v.opts.SkipBodyFiles:
			// Nothing is sent: no consent is asked, and none is given.
		default:
			v.errorf(at, "add --allow-host "+e+" to the command: a host beyond loopback needs the scenario's allow_hosts and the command's consent", "allow_hosts: %s is not allowed by the command (no --allow-host %s)", h, e)
		}
	}
	// Entries were checked one by one above.
	v.listed, _ = reach.New(listed)
	sc.Reach, _ = reach.New(consented)
}

// isLoopbackPrefix says whether e is a CIDR prefix inside loopback.
func isLoopbackPrefix(e string) bool {
	addr, _, ok := strings.Cut(e, "/")
	return ok && reach.IsLoopback(addr)
}

// checkReach records an error at path unless raw (a URL or host:port) is
// on loopback or on a host allow_hosts lists; what, when not empty, names
// the address in the message. A listed host the command did not consent
// to is reported once, at its allow_hosts entry.
func (v *validator) checkReach(path, what, raw string) {
	host, err := reach.Host(raw)
	if err != nil {
		v.errorf(path, "", "%v", err)
		return
	}
	if v.listed.AllowsHost(host) {
		return
	}
	hint := "chaoskit sends traffic to loopback (127.0.0.0/8, ::1), and beyond it only to a host the scenario lists under allow_hosts and the command names with --allow-host"
	if h, err := reach.Entry(host); err == nil {
		hint = fmt.Sprintf("reach it through loopback (a port forward), or add allow_hosts: [%s] to the scenario and --allow-host %s to the command", h, h)
	}
	if what != "" {
		what += " "
	}
	v.errorf(path, hint, "%s%q is not a loopback address", what, host)
}
