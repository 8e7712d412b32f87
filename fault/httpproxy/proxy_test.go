package httpproxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/fault"
)

// recorder keeps what the faults did.
type recorder struct {
	mu   sync.Mutex
	done []Done
}

func (r *recorder) record(d Done) {
	r.mu.Lock()
	r.done = append(r.done, d)
	r.mu.Unlock()
}

func (r *recorder) count(action string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, d := range r.done {
		if d.Action == action {
			n++
		}
	}
	return n
}

func startHTTP(t *testing.T, upstream http.Handler) *Proxy {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	p, err := Start("127.0.0.1:0", strings.TrimPrefix(up.URL, "http://"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var priceHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintf(w, `{"path":%q,"tenant":%q}`, r.URL.Path, r.Header.Get("X-Tenant"))
})

func get(t *testing.T, c *http.Client, url string, header map[string]string) (int, string, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// An abort of 50 % of GET /price/* answers 503 to about half of those
// requests, never to others, and the record says which.
func TestAbortShareAndMatch(t *testing.T) {
	p := startHTTP(t, priceHandler)
	var rec recorder
	p.Enable(Fault{ID: "proxy/prices", Action: Abort, Status: 503, Probability: 0.5,
		Match: &fault.Match{Method: "GET", Path: "/price/*"}, Record: rec.record})
	c := &http.Client{}
	const n = 2000
	aborted := 0
	for i := range n {
		code, _, err := get(t, c, fmt.Sprintf("http://%s/price/%d", p.Addr(), i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if code == 503 {
			aborted++
		}
	}
	for _, path := range []string{"/other/1", "/price/1/history"} {
		if code, _, err := get(t, c, "http://"+p.Addr()+path, nil); err != nil || code != 200 {
			t.Errorf("GET %s: %d %v, want 200: the fault matches GET /price/* only", path, code, err)
		}
	}
	if share := float64(aborted) / n; math.Abs(share-0.5) > 0.05 {
		t.Errorf("%d of %d aborted (%.1f%%), want 50%% ± 5", aborted, n, share*100)
	}
	if got := rec.count("abort 503"); got != aborted {
		t.Errorf("recorded %d aborts, the client saw %d", got, aborted)
	}
	if got := rec.count("passed"); got != n-aborted {
		t.Errorf("recorded %d passed, the client saw %d", got, n-aborted)
	}
	matched, acted, ok := p.Disable("proxy/prices")
	if !ok || matched != n || acted != aborted {
		t.Errorf("Disable = %d, %d, %v; want %d, %d, true", matched, acted, ok, n, aborted)
	}
	if code, _, _ := get(t, c, "http://"+p.Addr()+"/price/1", nil); code != 200 {
		t.Errorf("after Disable: %d, want 200", code)
	}
}

// A fault matching X-Tenant: b leaves tenant a's requests alone, and a
// count stops it after that many.
func TestHeaderMatchAndCount(t *testing.T) {
	p := startHTTP(t, priceHandler)
	p.Enable(Fault{ID: "f", Action: Abort, Status: 502, Count: 3, Match: &fault.Match{Headers: map[string]string{"X-Tenant": "b"}}})
	c := &http.Client{}
	var codes []int
	for i := range 10 {
		code, body, err := get(t, c, "http://"+p.Addr()+"/price/1", map[string]string{"x-tenant": "a"})
		if err != nil || code != 200 || !strings.Contains(body, `"tenant":"a"`) {
			t.Fatalf("tenant a, request %d: %d %q %v", i, code, body, err)
		}
		code, _, err = get(t, c, "http://"+p.Addr()+"/price/1", map[string]string{"X-Tenant": "b"})
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, code)
	}
	if want := []int{502, 502, 502, 200, 200, 200, 200, 200, 200, 200}; fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("tenant b got %v, want %v", codes, want)
	}
}

// A delay holds the request; a body fault replaces the answer; a drop cuts
// it after the bytes let through.
func TestDelayBodyDrop(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	p := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, big)
	}))
	c := &http.Client{}
	url := "http://" + p.Addr() + "/x"

	p.Enable(Fault{ID: "d", Action: Delay, Delay: 150 * time.Millisecond})
	start := time.Now()
	if code, _, err := get(t, c, url, nil); err != nil || code != 200 {
		t.Fatalf("delay: %d %v", code, err)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("delay of 150ms took %v", took)
	}
	p.Disable("d")

	p.Enable(Fault{ID: "b", Action: Body, Body: `{"price":0}`})
	if code, body, err := get(t, c, url, nil); err != nil || code != 200 || body != `{"price":0}` {
		t.Errorf("body: %d %q %v", code, body, err)
	}
	p.Disable("b")

	p.Enable(Fault{ID: "x", Action: Drop, Bytes: 1000})
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("drop after 1000 bytes: the headers must come through: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(b) != 1000 || resp.StatusCode != 200 {
		t.Errorf("drop: status %d, read %d bytes, error %v; want 200, 1000 bytes, an error", resp.StatusCode, len(b), err)
	}
}

// HTTP/2 without TLS goes through to an h2c upstream, faults and all.
func TestH2C(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proto %d", r.ProtoMajor)
	}))
	up.Config.Protocols = new(http.Protocols)
	up.Config.Protocols.SetUnencryptedHTTP2(true)
	up.Start()
	defer up.Close()
	p, err := Start("127.0.0.1:0", strings.TrimPrefix(up.URL, "http://"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tr := &http.Transport{Protocols: new(http.Protocols), TLSClientConfig: &tls.Config{}}
	tr.Protocols.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: tr}
	if code, body, err := get(t, c, "http://"+p.Addr()+"/", nil); err != nil || code != 200 || body != "proto 2" {
		t.Fatalf("h2c through the proxy: %d %q %v", code, body, err)
	}
	p.Enable(Fault{ID: "a", Action: Abort, Status: 429})
	if code, _, err := get(t, c, "http://"+p.Addr()+"/", nil); err != nil || code != 429 {
		t.Errorf("h2c abort: %d %v, want 429", code, err)
	}
}

// A gRPC proxy aborts about 30 % of one method with UNAVAILABLE, passes
// the rest and every other method, and a drop resets the call.
func TestGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	defer srv.Stop()
	p, err := Start("127.0.0.1:0", lis.Addr().String(), Options{GRPC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := grpc.NewClient(p.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rec recorder
	p.Enable(Fault{ID: "g", Action: Abort, Code: codes.Unavailable, Probability: 0.3,
		Match: &fault.Match{GRPCMethod: "grpc.health.v1.Health/Check"}, Record: rec.record})
	const n = 2000
	unavailable := 0
	for range n {
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		switch status.Code(err) {
		case codes.OK:
		case codes.Unavailable:
			unavailable++
		default:
			t.Fatalf("Check: %v", err)
		}
	}
	if share := float64(unavailable) / n; math.Abs(share-0.3) > 0.05 {
		t.Errorf("%d of %d UNAVAILABLE (%.1f%%), want 30%% ± 5", unavailable, n, share*100)
	}
	if got := rec.count("abort UNAVAILABLE"); got != unavailable {
		t.Errorf("recorded %d aborts, the client saw %d", got, unavailable)
	}
	if _, err := hc.List(ctx, &healthpb.HealthListRequest{}); err != nil {
		t.Errorf("List, which the fault does not match: %v", err)
	}
	p.Disable("g")
	p.Enable(Fault{ID: "d", Action: Drop})
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) == codes.OK {
		t.Errorf("a dropped call succeeded")
	}
}

func TestCodeNames(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want codes.Code
		ok   bool
	}{
		{"UNAVAILABLE", codes.Unavailable, true},
		{"deadline_exceeded", codes.DeadlineExceeded, true},
		{"14", codes.Unavailable, true},
		{"OK", codes.OK, true},
		{"17", 0, false},
		{"UNAVALABLE", 0, false},
	} {
		got, ok := ParseCode(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseCode(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
