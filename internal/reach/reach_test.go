package reach

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEntry(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"Svc.Example.", "svc.example", ""},
		{"10.1.2.3", "10.1.2.3", ""},
		{"[2001:db8::1]", "2001:db8::1", ""},
		{"10.1.2.3/24", "10.1.2.0/24", ""},
		{"db_1", "db_1", ""},
		{"", "", "empty host"},
		{"http://svc.example", "", "is a URL"},
		{"svc.example:80", "", "has a port"},
		{"10.1.2.3:80", "", "has a port"},
		{"bad host", "", "not a host name"},
		{"-bad.example", "", "not a host name"},
	} {
		got, err := Entry(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Entry(%q) = %q, %v; want an error saying %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Entry(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestAllowsHost(t *testing.T) {
	p, err := New([]string{"svc.example", "10.9.0.7", "10.8.0.0/16", "2001:db8::/64"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host      string
		nil_, pol bool
	}{
		{"127.0.0.1", true, true},
		{"127.3.4.5", true, true},
		{"::1", true, true},
		{"localhost", true, true},
		{"LOCALHOST.", true, true},
		{"svc.example", false, true},
		{"SVC.example.", false, true},
		{"other.example", false, false},
		{"sub.svc.example", false, false},
		{"10.9.0.7", false, true},
		{"10.9.0.8", false, false},
		{"10.8.200.1", false, true},
		{"10.7.0.1", false, false},
		{"2001:db8::5", false, true},
		{"::ffff:10.9.0.7", false, true},
		{"2001:db9::5", false, false},
	} {
		if got := (*Policy)(nil).AllowsHost(tt.host); got != tt.nil_ {
			t.Errorf("nil policy allows %s: %v, want %v", tt.host, got, tt.nil_)
		}
		if got := p.AllowsHost(tt.host); got != tt.pol {
			t.Errorf("policy allows %s: %v, want %v", tt.host, got, tt.pol)
		}
	}
	if err := p.Check("http://other.example:8080/x"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "allowed by consent") {
		t.Errorf("Check of a host not allowed: %v", err)
	}
	if err := (*Policy)(nil).Check("10.9.0.7:80"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "loopback addresses only") {
		t.Errorf("Check with no policy: %v", err)
	}
	if err := p.Check("https://svc.example/"); err != nil {
		t.Errorf("Check of an allowed name: %v", err)
	}
}

// TestControlChecksTheFinalAddress: the connect-time guard lets through
// only loopback, allowed addresses and what allowed names resolved to.
func TestControlChecksTheFinalAddress(t *testing.T) {
	p, _ := New([]string{"svc.example", "10.9.0.7"})
	p.WithLookup(func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.5.0.1"), netip.MustParseAddr("::ffff:10.5.0.2")}, nil
	})
	for addr, ok := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "10.9.0.7:1": true, "10.5.0.1:1": false, "10.6.0.1:1": false} {
		if err := p.Control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("Control(%s) before resolving = %v, want allowed %v", addr, err, ok)
		}
	}
	got, err := p.Resolve(context.Background(), "svc.example:443")
	if want := []string{"10.5.0.1:443", "10.5.0.2:443"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Resolve = %v, %v; want %v", got, err, want)
	}
	for addr, ok := range map[string]bool{"10.5.0.1:1": true, "10.5.0.2:1": true, "10.6.0.1:1": false} {
		if err := p.Control("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("Control(%s) after resolving = %v, want allowed %v", addr, err, ok)
		}
	}
}

func TestResolve(t *testing.T) {
	asked := 0
	p, _ := New([]string{"svc.example", "10.9.0.0/24"})
	p.WithLookup(func(context.Context, string) ([]netip.Addr, error) {
		asked++
		return nil, errors.New("no such host")
	})
	for _, tt := range []struct {
		addr string
		want []string
		err  string
	}{
		{"localhost:80", []string{"127.0.0.1:80", "[::1]:80"}, ""},
		{"127.0.0.2:80", []string{"127.0.0.2:80"}, ""},
		{"10.9.0.3:80", []string{"10.9.0.3:80"}, ""},
		{"10.9.1.3:80", nil, "allowed by consent"},
		{"other.example:80", nil, "allowed by consent"},
		{"svc.example:80", nil, "no such host"},
	} {
		got, err := p.Resolve(context.Background(), tt.addr)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%s) = %v, %v; want an error saying %q", tt.addr, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Resolve(%s) = %v, %v; want %v", tt.addr, got, err, tt.want)
		}
	}
	if asked != 1 {
		t.Errorf("the resolver was asked %d times, want once (for the allowed name only)", asked)
	}
	if _, err := (*Policy)(nil).Resolve(context.Background(), "svc.example:80"); !errors.Is(err, ErrRefused) {
		t.Errorf("nil policy resolved a name: %v", err)
	}
}

// TestDial: a name resolving to an
// address is dialled there; an address the guard refuses is never
// connected to, even when a resolver answer is rewritten on the way.
func TestDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := New([]string{"svc.example"})
	p.WithLookup(func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})
	dial := p.Dial(&net.Dialer{Timeout: time.Second})
	c, err := dial(context.Background(), "tcp", "svc.example:"+port)
	if err != nil {
		t.Fatalf("dial of an allowed name: %v", err)
	}
	c.Close()
	start := time.Now()
	if _, err := dial(context.Background(), "tcp", "192.0.2.1:"+port); !errors.Is(err, ErrRefused) || time.Since(start) > 100*time.Millisecond {
		t.Errorf("dial of an address not allowed: %v after %v", err, time.Since(start))
	}
	// The guard alone (as when a dialer is handed a literal that passed
	// no check): refused before connecting.
	d := &net.Dialer{Timeout: time.Second, Control: p.Control}
	if _, err := d.Dial("tcp", "192.0.2.1:"+port); !errors.Is(err, ErrRefused) {
		t.Errorf("Control let 192.0.2.1 through: %v", err)
	}
}

func TestNewNoEntriesIsLoopbackOnly(t *testing.T) {
	p, err := New(nil)
	if err != nil || p != nil {
		t.Fatalf("New(nil) = %v, %v", p, err)
	}
	if _, err := New([]string{"http://x"}); err == nil {
		t.Error("New accepted a URL")
	}
	if h := p.Hosts(); h != nil {
		t.Errorf("Hosts of nil = %v", h)
	}
}
