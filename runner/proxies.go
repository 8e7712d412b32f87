package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaoskit/chaoskit/fault"
	"github.com/chaoskit/chaoskit/netfault"
)

// ProxyLog is where toxiproxy's warnings and errors go, in the run
// directory.
const ProxyLog = "proxies.log"

// startProxies starts the scenario's proxies, in-process, on their ports;
// they run until the run ends (stopProxies), and die with chaoskit.
func (r *run) startProxies() error {
	if len(r.sc.Proxies) == 0 {
		return nil
	}
	f, err := os.Create(filepath.Join(r.dir, ProxyLog))
	if err != nil {
		return infra("cannot write "+ProxyLog, "", err)
	}
	r.proxyLog = f
	// An upstream beyond loopback is reached only on a host the scenario
	// and the command consented to.
	r.proxies = netfault.New(netfault.Options{Log: f, AllowHosts: r.sc.Reach.Hosts()})
	for _, spec := range r.sc.Proxies {
		p := spec.WithPorts(r.ports)
		var addr string
		var err error
		if decl := p.Decl(); decl.Protocol == "tcp" {
			addr, err = r.proxies.Start(netfault.Proxy{Name: p.Name, Listen: p.Listen, Upstream: p.Upstream})
		} else {
			// A proxy that understands its protocol is its fault source's
			// own server.
			var srv fault.Server
			if srv, err = fault.Serving(decl.Protocol).Serve(decl, f); err == nil {
				if r.servers == nil {
					r.servers = map[string]fault.Server{}
				}
				r.servers[p.Name] = srv
				addr = srv.Addr()
			}
		}
		if err != nil {
			return infra(fmt.Sprintf("cannot start proxy %s", p.Name), "free the port, or leave listen out so that chaoskit picks one", err)
		}
		r.event(processEvent("proxy started", map[string]any{"proxy": p.Name, "listen": addr, "upstream": p.Upstream}))
	}
	return nil
}

// stopProxies switches every proxy fault off and stops the proxies.
func (r *run) stopProxies() error {
	if r.proxies == nil {
		return nil
	}
	err := r.proxies.Close()
	for _, srv := range r.servers {
		err = errors.Join(err, srv.Close())
	}
	r.proxyLog.Close()
	if err != nil {
		return infra("the proxies did not stop", "this is a bug in chaoskit", err)
	}
	return nil
}
