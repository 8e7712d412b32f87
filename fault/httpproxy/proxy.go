// Package httpproxy is the fault source of the scenario's HTTP and gRPC
// proxies: a reverse proxy (net/http/httputil) in front of a dependency
// that speaks HTTP/1.1, HTTP/2 without TLS (h2c) or gRPC, which aborts,
// delays, drops or rewrites the requests a fault matches — by method, path
// pattern, header or gRPC method — with a probability and a count. The
// dependency is not changed; the service is pointed at the proxy.
//
// Every request a fault matches while it is on is recorded on the run's
// timeline (a fault_request event saying what was done to it, "abort 503"
// or "passed"), so that the share a fault took can be measured; when the
// fault goes off, a fault_hits event gives how many it acted on.
package httpproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/chaoskit/chaoskit/fault"
)

// Actions are what a fault does to a request it matches.
const (
	// Abort answers at once without asking the dependency: an HTTP status
	// (value, default 503), or for gRPC a status code (value, default
	// UNAVAILABLE) in a trailers-only answer.
	Abort = "abort"
	// Delay holds the request for value (such as 300ms) before it goes on.
	Delay = "delay"
	// Drop passes the request on, lets the answer's headers and value bytes
	// of its body through (default 0), then cuts the connection (an
	// HTTP/2 stream is reset).
	Drop = "drop"
	// Body answers with value as the body instead of the dependency's
	// (HTTP only), keeping its status and headers.
	Body = "body"
)

// Actions lists the actions, in the order hints name them.
var Actions = []string{Abort, Delay, Drop, Body}

// Fault is one fault on a proxy, as the proxy runs it.
type Fault struct {
	// ID names the fault in the proxy (its path and when it went on), so
	// that switching it off removes it alone.
	ID     string
	Action string
	// Status is an abort's HTTP status; Code a gRPC abort's code.
	Status int
	Code   codes.Code
	// Delay is how long a delay holds a request.
	Delay time.Duration
	// Bytes is how much of the body a drop lets through.
	Bytes int64
	// Body is what a body fault answers.
	Body string
	// Match says which requests the fault applies to; nil is all.
	Match *fault.Match
	// Probability is the share of the matched requests it acts on; 0 is
	// every one. Count is the most it acts on; 0 is no limit.
	Probability float64
	Count       int
	// Record receives what the fault did to each request it matched; nil
	// records nothing.
	Record func(Done)
}

// Done is what a fault did to one request it matched.
type Done struct {
	// Fault is the ID of the fault.
	Fault string
	// Request is the request, "GET /price/7"; gRPC calls are POSTs to
	// /package.Service/Method.
	Request string
	// Action is what was done: "abort 503", "abort UNAVAILABLE",
	// "delay 300ms", "drop after 0 bytes", "body", or "passed" when the
	// draw or the count let it through.
	Action string
}

// Options configure a proxy.
type Options struct {
	// GRPC says the upstream speaks gRPC: aborts answer with a gRPC status,
	// and the upstream is asked over HTTP/2 always.
	GRPC bool
	// Log receives the proxy's troubles (an upstream that cannot be
	// reached); nil discards them.
	Log io.Writer
}

// Proxy is a running HTTP-aware proxy.
type Proxy struct {
	opts   Options
	ln     net.Listener
	srv    *http.Server
	pass   *httputil.ReverseProxy // every other request
	flush  *httputil.ReverseProxy // drops: each write flushed, so the cut is mid-answer
	mu     sync.Mutex
	faults []*active
	done   chan struct{}
}

// active is a fault switched on, with its counts.
type active struct {
	Fault
	matched, acted int
}

// Start listens on listen (a loopback address) and forwards to upstream
// (host:port) until Close.
func Start(listen, upstream string, opts Options) (*Proxy, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	p := &Proxy{opts: opts, ln: ln, done: make(chan struct{})}
	target := &url.URL{Scheme: "http", Host: upstream}
	h1 := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	h2 := &http.Transport{Proxy: nil, IdleConnTimeout: 30 * time.Second, Protocols: new(http.Protocols)}
	h2.Protocols.SetUnencryptedHTTP2(true)
	var rt http.RoundTripper = byProto{h1: h1, h2: h2}
	if opts.GRPC {
		rt = h2
	}
	logger := log.New(opts.Log, "", log.LstdFlags)
	mk := func(flush time.Duration) *httputil.ReverseProxy {
		return &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(target)
				r.Out.Host = r.In.Host
			},
			Transport:      rt,
			FlushInterval:  flush,
			ErrorLog:       logger,
			ModifyResponse: modify,
		}
	}
	p.pass, p.flush = mk(0), mk(-1)
	p.srv = &http.Server{Handler: p, ErrorLog: logger, Protocols: new(http.Protocols), ReadHeaderTimeout: 10 * time.Second}
	p.srv.Protocols.SetHTTP1(true)
	p.srv.Protocols.SetUnencryptedHTTP2(true)
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// byProto asks the upstream in the protocol the request came in: h2c for
// HTTP/2, HTTP/1.1 otherwise.
type byProto struct{ h1, h2 http.RoundTripper }

func (b byProto) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.ProtoMajor == 2 {
		return b.h2.RoundTrip(r)
	}
	return b.h1.RoundTrip(r)
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy at once, cutting the requests under way.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	<-p.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Enable switches f on; faults are tried in the order they went on, and
// the first that matches a request decides for it.
func (p *Proxy) Enable(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &active{Fault: f})
}

// Disable switches the fault with id off and returns how many requests it
// matched and how many it acted on; ok is false when it was not on.
func (p *Proxy) Disable(id string) (matched, acted int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, a := range p.faults {
		if a.ID == id {
			p.faults = append(p.faults[:i], p.faults[i+1:]...)
			return a.matched, a.acted, true
		}
	}
	return 0, 0, false
}

// Matches says whether r is one of the requests m names.
func Matches(m *fault.Match, r *http.Request) bool {
	if m == nil {
		return true
	}
	if m.Method != "" && !strings.EqualFold(m.Method, r.Method) {
		return false
	}
	if m.Path != "" {
		if ok, _ := path.Match(m.Path, r.URL.Path); !ok {
			return false
		}
	}
	if m.GRPCMethod != "" && r.URL.Path != "/"+strings.TrimPrefix(m.GRPCMethod, "/") {
		return false
	}
	for k, v := range m.Headers {
		if !containsValue(r.Header.Values(k), v) {
			return false
		}
	}
	return true
}

func containsValue(vals []string, v string) bool {
	for _, x := range vals {
		if x == v {
			return true
		}
	}
	return false
}

// decide returns the fault that acts on r, nil when none does, and
// records what each matching fault did.
func (p *Proxy) decide(r *http.Request) *Fault {
	p.mu.Lock()
	var hit *Fault
	var done Done
	var record func(Done)
	for _, a := range p.faults {
		if !Matches(a.Match, r) {
			continue
		}
		a.matched++
		record = a.Record
		done = Done{Fault: a.ID, Request: r.Method + " " + r.URL.Path, Action: "passed"}
		if (a.Count == 0 || a.acted < a.Count) && (a.Probability == 0 || rand.Float64() < a.Probability) {
			a.acted++
			f := a.Fault
			hit = &f
			done.Action = describe(f, p.opts.GRPC)
		}
		break
	}
	p.mu.Unlock()
	if record != nil {
		record(done)
	}
	return hit
}

// describe says what f does to a request.
func describe(f Fault, grpc bool) string {
	switch f.Action {
	case Abort:
		if grpc {
			return "abort " + CodeName(f.Code)
		}
		return "abort " + strconv.Itoa(f.Status)
	case Delay:
		return "delay " + f.Delay.String()
	case Drop:
		return fmt.Sprintf("drop after %d bytes", f.Bytes)
	}
	return f.Action
}

// ctxKey carries a body or drop fault to ModifyResponse.
type ctxKey struct{}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := p.decide(r)
	if f == nil {
		p.pass.ServeHTTP(w, r)
		return
	}
	switch f.Action {
	case Abort:
		if p.opts.GRPC {
			// A trailers-only answer: HTTP 200 whose headers end the
			// stream with the status, as a gRPC server answers a call it
			// refuses.
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", strconv.Itoa(int(f.Code)))
			w.Header().Set("Grpc-Message", "fault injected by chaoskit")
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(f.Status)
		fmt.Fprintln(w, "fault injected by chaoskit")
		return
	case Delay:
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		p.pass.ServeHTTP(w, r)
		return
	case Drop:
		p.flush.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, f)))
		return
	case Body:
		p.pass.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, f)))
		return
	}
	p.pass.ServeHTTP(w, r)
}

// modify rewrites the dependency's answer for a body or drop fault.
func modify(resp *http.Response) error {
	f, _ := resp.Request.Context().Value(ctxKey{}).(*Fault)
	if f == nil {
		return nil
	}
	switch f.Action {
	case Body:
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(f.Body))
		resp.ContentLength = int64(len(f.Body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(f.Body)))
		resp.Header.Del("Content-Encoding")
	case Drop:
		// The body fails after Bytes: ReverseProxy then aborts the
		// handler, which closes an HTTP/1.1 connection and resets an
		// HTTP/2 stream.
		resp.Body = &cut{ReadCloser: resp.Body, left: f.Bytes}
	}
	return nil
}

// errDropped is the read error that makes the proxy cut an answer.
var errDropped = errors.New("answer dropped by a fault")

// cut lets left bytes through, then fails.
type cut struct {
	io.ReadCloser
	left int64
}

func (c *cut) Read(b []byte) (int, error) {
	if c.left <= 0 {
		return 0, errDropped
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.ReadCloser.Read(b)
	c.left -= int64(n)
	if err == io.EOF {
		// The answer was shorter than the bytes let through: cut it
		// anyway, at its end.
		err = errDropped
	}
	return n, err
}

// CodeName is a gRPC code as the scenario writes it, such as UNAVAILABLE.
func CodeName(c codes.Code) string {
	if c == codes.OK {
		return "OK"
	}
	var b strings.Builder
	s := c.String() // "Unavailable", "DeadlineExceeded"
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// ParseCode reads a gRPC code by name (UNAVAILABLE, unavailable) or
// number (14).
func ParseCode(s string) (codes.Code, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 16 {
			return 0, false
		}
		return codes.Code(n), true
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.EqualFold(CodeName(c), s) {
			return c, true
		}
	}
	return 0, false
}

// CodeNames lists the gRPC codes by name.
func CodeNames() []string {
	var out []string
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		out = append(out, CodeName(c))
	}
	return out
}
