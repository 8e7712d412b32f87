package netfault_test

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/chaoskit/chaoskit/netfault"
)

// A proxy in front of a dependency (here a server that echoes), and 100 ms
// of latency switched on while a connection is open.
func ExampleProxies() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()

	proxies := netfault.New(netfault.Options{})
	defer proxies.Close()
	addr, err := proxies.Start(netfault.Proxy{Name: "db", Upstream: ln.Addr().String()})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, _ := net.Dial("tcp", addr)
	defer c.Close()
	roundTrip := func() time.Duration {
		start := time.Now()
		_, _ = c.Write([]byte("ping"))
		_, _ = io.ReadFull(c, make([]byte, 4))
		return time.Since(start)
	}

	fault := netfault.Fault{Proxy: "db", Kind: netfault.Latency, Latency: 100 * time.Millisecond}
	if err := proxies.Enable(fault); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fault, roundTrip() >= 100*time.Millisecond)
	_ = proxies.Disable(fault)
	fmt.Println("off", roundTrip() < 100*time.Millisecond)
	// Output:
	// proxy db latency 100ms true
	// off true
}

// A fault that cannot work names the setting at fault and what would be
// right.
func ExampleFault_Validate() {
	f := netfault.Fault{Proxy: "postgres", Kind: netfault.Latency, Latency: 300 * time.Millisecond, Rate: 10}
	fmt.Println(f.Validate())
	f = netfault.Fault{Proxy: "postgres", Kind: "latncy"}
	fmt.Println(f.Validate())
	// Output:
	// rate: rate is not a setting of a latency fault (remove it; a latency fault takes latency, jitter, distribution)
	// kind: unknown network fault kind "latncy" (did you mean "latency"?)
}
