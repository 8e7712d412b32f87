package netfault_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/netfault"
)

// upstream is a loopback server that runs handle on each connection, and
// waits for them all when the test ends.
func upstream(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// sendAndClose writes n bytes and closes.
func sendAndClose(n int) func(net.Conn) {
	return func(c net.Conn) { _, _ = c.Write(bytes.Repeat([]byte("x"), n)) }
}

// proxy starts a proxy named name to up, closed when the test ends.
func proxy(t *testing.T, name, up string) (*netfault.Proxies, string) {
	t.Helper()
	ps := netfault.New(netfault.Options{})
	t.Cleanup(func() {
		if err := ps.Close(); err != nil {
			t.Error(err)
		}
	})
	addr, err := ps.Start(netfault.Proxy{Name: name, Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	return ps, addr
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a line through c (to an echo upstream) and returns how
// long the answer took.
func roundTrip(t *testing.T, c net.Conn) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetDeadline(start.Add(5 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

func enable(t *testing.T, ps *netfault.Proxies, f netfault.Fault) {
	t.Helper()
	if err := ps.Enable(f); err != nil {
		t.Fatal(err)
	}
}

func disable(t *testing.T, ps *netfault.Proxies, f netfault.Fault) {
	t.Helper()
	if err := ps.Disable(f); err != nil {
		t.Fatal(err)
	}
}

func TestLatencyOnAndOffWhileTrafficFlows(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	c := dial(t, addr)
	if d := roundTrip(t, c); d > 50*time.Millisecond {
		t.Fatalf("round trip without a fault took %v", d)
	}
	for _, dir := range []netfault.Direction{netfault.Downstream, netfault.Upstream} {
		f := netfault.Fault{Proxy: "db", Kind: netfault.Latency, Direction: dir, Latency: 100 * time.Millisecond}
		enable(t, ps, f) // on the open connection
		if d := roundTrip(t, c); d < 100*time.Millisecond || d > 400*time.Millisecond {
			t.Errorf("%s latency 100ms: round trip %v", dir, d)
		}
		disable(t, ps, f)
		if d := roundTrip(t, c); d > 50*time.Millisecond {
			t.Errorf("%s latency off: round trip %v", dir, d)
		}
	}
}

func TestLatencyJitter(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	enable(t, ps, netfault.Fault{Proxy: "db", Kind: netfault.Latency, Latency: 60 * time.Millisecond, Jitter: 40 * time.Millisecond})
	c := dial(t, addr)
	lo, hi := time.Hour, time.Duration(0)
	for range 12 {
		d := roundTrip(t, c)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 20*time.Millisecond || hi > 400*time.Millisecond || hi-lo < 10*time.Millisecond {
		t.Fatalf("latency 60ms ±40ms gave round trips from %v to %v", lo, hi)
	}
}

func TestBandwidthCapsThroughput(t *testing.T) {
	const size = 60 << 10
	ps, addr := proxy(t, "api", upstream(t, sendAndClose(size)))
	enable(t, ps, netfault.Fault{Proxy: "api", Kind: netfault.Bandwidth, Rate: 200}) // KB/s
	c := dial(t, addr)
	start := time.Now()
	n, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	if err != nil || n != size {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	// 60 KB at 200 KB/s: 0.3 s.
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("60 KB at 200 KB/s took %v, want about 300ms", took)
	}
}

func TestSlowCloseDelaysTheClose(t *testing.T) {
	ps, addr := proxy(t, "api", upstream(t, sendAndClose(10)))
	enable(t, ps, netfault.Fault{Proxy: "api", Kind: netfault.SlowClose, Delay: 200 * time.Millisecond})
	// The delay runs from the upstream's close, which the proxy may see
	// before dial returns here on a loaded machine: time from before the dial.
	start := time.Now()
	c := dial(t, addr)
	_ = c.SetDeadline(start.Add(5 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if took := time.Since(start); err != nil || n != 10 || took < 200*time.Millisecond {
		t.Fatalf("read %d bytes, %v, closed after %v; want 10 bytes and the close after 200ms", n, err, took)
	}
}

func TestTimeoutHoldsTheData(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	c := dial(t, addr)
	roundTrip(t, c)
	f := netfault.Fault{Proxy: "db", Kind: netfault.Timeout}
	enable(t, ps, f)
	_, _ = c.Write([]byte("ping\n"))
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var ne net.Error
	if n, err := c.Read(make([]byte, 5)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read under a timeout fault: %d bytes, %v; want nothing until the deadline", n, err)
	}
	// Switched off, the connections it held are closed.
	disable(t, ps, f)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 5)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the timeout fault: %v, want the connection closed", err)
	}
	if d := roundTrip(t, dial(t, addr)); d > 50*time.Millisecond {
		t.Fatalf("a new connection after the fault: %v", d)
	}

	// With a timeout, the held connection is closed after it.
	enable(t, ps, netfault.Fault{Proxy: "db", Kind: netfault.Timeout, Timeout: 150 * time.Millisecond})
	c = dial(t, addr)
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(5 * time.Second))
	_, _ = c.Write([]byte("ping\n"))
	if _, err := c.Read(make([]byte, 5)); !errors.Is(err, io.EOF) || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("timeout 150ms: %v after %v, want EOF after 150ms", err, time.Since(start))
	}
}

func TestResetPeerIsECONNRESET(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	for _, dir := range []netfault.Direction{netfault.Downstream, netfault.Upstream} {
		f := netfault.Fault{Proxy: "db", Kind: netfault.ResetPeer, Direction: dir}
		enable(t, ps, f)
		c := dial(t, addr)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte("ping\n"))
		_, err := io.ReadAll(c)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s reset_peer: read %v, want ECONNRESET", dir, err)
		}
		disable(t, ps, f)
	}
}

func TestSlicerCutsTheData(t *testing.T) {
	ps, addr := proxy(t, "api", upstream(t, sendAndClose(200)))
	enable(t, ps, netfault.Fault{Proxy: "api", Kind: netfault.Slicer, AverageSize: 10, Delay: 5 * time.Millisecond})
	c := dial(t, addr)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	reads, total, largest := 0, 0, 0
	buf := make([]byte, 1024)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			reads, total, largest = reads+1, total+n, max(largest, n)
		}
		if err != nil {
			break
		}
	}
	// 200 bytes in slices of about 10, 5 ms apart: many small reads (a
	// slow reader may find two slices together).
	if total != 200 || reads < 8 || largest > 100 {
		t.Fatalf("%d bytes in %d reads, largest %d; want 200 in many small reads", total, reads, largest)
	}
}

func TestLimitDataClosesAfterBytes(t *testing.T) {
	ps, addr := proxy(t, "api", upstream(t, sendAndClose(1000)))
	enable(t, ps, netfault.Fault{Proxy: "api", Kind: netfault.LimitData, Bytes: 100})
	c := dial(t, addr)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	n, _ := io.Copy(io.Discard, c)
	if n != 100 {
		t.Fatalf("read %d bytes through limit_data 100, want 100", n)
	}
}

func TestDownRefusesConnections(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	c := dial(t, addr)
	roundTrip(t, c)
	down := netfault.Fault{Proxy: "db", Kind: netfault.Down}
	enable(t, ps, down)
	if _, err := net.DialTimeout("tcp", addr, time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial a down proxy: %v, want connection refused", err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection open when the proxy went down still reads")
	}
	disable(t, ps, down)
	if got, _ := ps.Addr("db"); got != addr {
		t.Fatalf("back up on %s, was %s", got, addr)
	}
	roundTrip(t, dial(t, addr))
}

func TestProbabilityActsOnSomeConnections(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	enable(t, ps, netfault.Fault{Proxy: "db", Kind: netfault.Latency, Latency: 50 * time.Millisecond, Probability: 0.5})
	slow := 0
	const conns = 40
	for range conns {
		c := dial(t, addr)
		if roundTrip(t, c) >= 50*time.Millisecond {
			slow++
		}
		c.Close()
	}
	// Binomial(40, 0.5): outside [8, 32] about once in 10^5 runs.
	if slow < 8 || slow > 32 {
		t.Fatalf("%d of %d connections delayed at probability 0.5", slow, conns)
	}
}

func TestActiveAndDoubleEnable(t *testing.T) {
	ps, _ := proxy(t, "db", upstream(t, echo))
	if _, err := ps.Start(netfault.Proxy{Name: "cache", Upstream: "127.0.0.1:6379"}); err != nil {
		t.Fatal(err)
	}
	faults := []netfault.Fault{
		{Proxy: "db", Kind: netfault.ResetPeer},
		{Proxy: "cache", Kind: netfault.Down},
		{Proxy: "db", Kind: netfault.Latency, Latency: time.Millisecond, Direction: netfault.Upstream},
		{Proxy: "db", Kind: netfault.Latency, Latency: time.Millisecond},
	}
	for _, f := range faults {
		enable(t, ps, f)
	}
	var got []string
	for _, f := range ps.Active() {
		got = append(got, f.String())
	}
	want := "proxy cache down|proxy db latency 1ms|proxy db latency 1ms upstream|proxy db reset_peer"
	if strings.Join(got, "|") != want {
		t.Fatalf("Active() = %q, want %q", strings.Join(got, "|"), want)
	}
	if err := ps.Enable(faults[0]); err == nil || !strings.Contains(err.Error(), "on already") {
		t.Fatalf("second Enable of one fault: %v", err)
	}
	disable(t, ps, faults[0])
	disable(t, ps, faults[0]) // not on: nothing to do
	if err := ps.Enable(netfault.Fault{Proxy: "nosuch", Kind: netfault.Down}); err == nil || !strings.Contains(err.Error(), `no proxy named "nosuch" (one of: cache, db)`) {
		t.Fatalf("fault on an unknown proxy: %v", err)
	}
}

func TestStartRefusesWhatCannotWork(t *testing.T) {
	ps := netfault.New(netfault.Options{})
	defer ps.Close()
	if _, err := ps.Start(netfault.Proxy{Name: "db", Upstream: "127.0.0.1:5432"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		p     netfault.Proxy
		field string
		msg   string
	}{
		{netfault.Proxy{Name: "pg", Upstream: "10.0.0.5:5432"}, "upstream", `"10.0.0.5:5432" is not a loopback address (127.0.0.1, ::1 or localhost`},
		{netfault.Proxy{Name: "pg", Upstream: "db.internal:5432"}, "upstream", "is not a loopback address"},
		{netfault.Proxy{Name: "pg", Upstream: "127.0.0.1"}, "upstream", "is not an address"},
		{netfault.Proxy{Name: "pg", Upstream: "127.0.0.1:0"}, "upstream", "has no usable port"},
		{netfault.Proxy{Name: "pg", Listen: "0.0.0.0:0", Upstream: "127.0.0.1:5432"}, "listen", "is not a loopback address"},
		{netfault.Proxy{Name: "", Upstream: "127.0.0.1:5432"}, "name", "cannot be used"},
		{netfault.Proxy{Name: "db", Upstream: "127.0.0.1:5433"}, "name", "already running"},
	}
	for _, tt := range tests {
		_, err := ps.Start(tt.p)
		var fe *netfault.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Start(%+v) = %v, want a %s error with %q", tt.p, err, tt.field, tt.msg)
		}
	}
}

func TestCloseEndsEveryGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	// Registered first, run last: after the upstream's cleanup.
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	up := upstream(t, echo)
	ps := netfault.New(netfault.Options{})
	addr, err := ps.Start(netfault.Proxy{Name: "db", Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []netfault.Fault{
		{Proxy: "db", Kind: netfault.Latency, Latency: 20 * time.Millisecond},
		{Proxy: "db", Kind: netfault.Bandwidth, Rate: 1000, Direction: netfault.Upstream},
		{Proxy: "db", Kind: netfault.Slicer, AverageSize: 8},
	} {
		if err := ps.Enable(f); err != nil {
			t.Fatal(err)
		}
	}
	// Clients talk while Close runs.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 64)
			for {
				if _, err := c.Write([]byte("hello, proxy\n")); err != nil {
					return
				}
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let traffic flow through the toxics
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	// At once, not after goleak's retries: Close waited for them.
	if n := toxiproxyGoroutines(); n != 0 {
		t.Fatalf("%d toxiproxy goroutines still run when Close returns", n)
	}
	wg.Wait()
	if err := ps.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := ps.Start(netfault.Proxy{Name: "x", Upstream: up}); !errors.Is(err, netfault.ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("a closed proxy still accepts")
	}
}

func TestLogGoesToTheWriter(t *testing.T) {
	var mu sync.Mutex
	var b bytes.Buffer
	ps := netfault.New(netfault.Options{Log: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return b.Write(p)
	})})
	// Nothing listens upstream: toxiproxy logs the failed dial as an error.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	addr, err := ps.Start(netfault.Proxy{Name: "gone", Upstream: dead})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Read(make([]byte, 1))
		c.Close()
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(b.String(), "Unable to open connection to upstream") || strings.Contains(b.String(), `"level":"info"`) {
		t.Fatalf("log = %q, want the upstream error and no info lines", b.String())
	}
}

// toxiproxyGoroutines counts the goroutines running toxiproxy's code.
func toxiproxyGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/Shopify/toxiproxy") {
			n++
		}
	}
	return n
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Faults switched on and off again and again while clients talk: nothing
// hangs, no byte is lost or changed, and Close still ends every goroutine.
func TestTogglingWhileTrafficFlows(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	up := upstream(t, echo)
	ps := netfault.New(netfault.Options{})
	addr, err := ps.Start(netfault.Proxy{Name: "db", Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			msg := []byte(strings.Repeat(string(rune('a'+i)), 200) + "\n")
			got := make([]byte, len(msg))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, msg) {
					errs <- errors.New("echo changed: " + string(got))
					return
				}
			}
		})
	}
	faults := []netfault.Fault{
		{Proxy: "db", Kind: netfault.Latency, Latency: 5 * time.Millisecond, Jitter: 2 * time.Millisecond},
		{Proxy: "db", Kind: netfault.Slicer, AverageSize: 16, SizeVariation: 4, Delay: 100 * time.Microsecond, Direction: netfault.Upstream},
		{Proxy: "db", Kind: netfault.Bandwidth, Rate: 500},
	}
	deadline := time.Now().Add(30 * time.Second)
	for round := range 10 {
		for _, f := range faults {
			if err := ps.Enable(f); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		for _, f := range faults {
			if err := ps.Disable(f); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("10 rounds of toggling took over 30 s")
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	if n := toxiproxyGoroutines(); n != 0 {
		t.Fatalf("%d toxiproxy goroutines after Close", n)
	}
}

// A proxy whose address was taken while it was down stays down, says why,
// and comes back once the address is free.
func TestDownComesBackWhenItsAddressIsFree(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	down := netfault.Fault{Proxy: "db", Kind: netfault.Down}
	enable(t, ps, down)
	squatter, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.Disable(down); err == nil || !strings.Contains(err.Error(), "bring the proxy back on "+addr) {
		squatter.Close()
		t.Fatalf("Disable with the address taken: %v", err)
	}
	if got := ps.Active(); len(got) != 1 || got[0].Kind != netfault.Down {
		t.Fatalf("Active() = %v, want the proxy still down", got)
	}
	squatter.Close()
	disable(t, ps, down)
	roundTrip(t, dial(t, addr))
}

// TestUpstreamBeyondLoopbackByConsent: an upstream beyond loopback starts
// only on a host Options.AllowHosts allows; a proxy still listens on
// loopback only.
func TestUpstreamBeyondLoopbackByConsent(t *testing.T) {
	ps := netfault.New(netfault.Options{AllowHosts: []string{"10.9.0.0/24", "db.allowed.example"}})
	defer ps.Close()
	if _, err := ps.Start(netfault.Proxy{Name: "allowed", Upstream: "10.9.0.5:5432"}); err != nil {
		t.Errorf("an allowed upstream: %v", err)
	}
	for _, tt := range []struct {
		p     netfault.Proxy
		field string
	}{
		{netfault.Proxy{Name: "other", Upstream: "10.9.1.5:5432"}, "upstream"},
		{netfault.Proxy{Name: "name", Upstream: "db.other.example:5432"}, "upstream"},
		{netfault.Proxy{Name: "listen", Listen: "10.9.0.6:0", Upstream: "10.9.0.5:5432"}, "listen"},
	} {
		_, err := ps.Start(tt.p)
		var fe *netfault.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(err.Error(), "is not a loopback address") {
			t.Errorf("Start(%+v) = %v, want a %s error", tt.p, err, tt.field)
		}
	}
	if err := (netfault.Proxy{Name: "pg", Upstream: "10.9.0.5:5432"}).Validate(); err == nil {
		t.Error("Validate, which allows loopback only, accepted 10.9.0.5")
	}
}
