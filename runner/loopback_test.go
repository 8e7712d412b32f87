package runner

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

func TestDialLoopbackOnly(t *testing.T) {
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
	dial := dialLoopback(&net.Dialer{Timeout: time.Second, Control: loopbackOnly})
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true}, {"localhost", true}, {"LOCALHOST.", true},
		{"10.0.0.1", false}, {"192.0.2.1", false}, {"2001:db8::1", false},
		// A name is refused before it is resolved: no DNS query leaves.
		{"example.com", false}, {"localhost.example.com", false}, {"127.0.0.1.nip.io", false},
	} {
		start := time.Now()
		c, err := dial(context.Background(), "tcp", net.JoinHostPort(tt.host, port))
		if c != nil {
			c.Close()
		}
		if tt.ok && err != nil {
			t.Errorf("%s refused: %v", tt.host, err)
		}
		if !tt.ok && (!errors.Is(err, errNotLoopback) || time.Since(start) > 100*time.Millisecond) {
			t.Errorf("%s: %v after %v, want an immediate refusal", tt.host, err, time.Since(start))
		}
	}
	for _, addr := range []string{"10.0.0.1:80", "192.168.1.1:443", "[2001:db8::1]:80"} {
		if err := loopbackOnly("tcp", addr, nil); !errors.Is(err, errNotLoopback) {
			t.Errorf("%s: %v", addr, err)
		}
	}
}

func TestControlClientFollowsNoRedirect(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/healthz", http.StatusFound))
	defer redirect.Close()

	tgt := &target{spec: plan.Target{Ready: plan.Ready{Path: "/healthz", Status: 200, Timeout: plan.Duration(300 * time.Millisecond)}},
		baseURL: redirect.URL, client: ControlClient(time.Second, nil)}
	defer tgt.client.CloseIdleConnections()
	err := tgt.waitReady(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "302 Found redirects to "+elsewhere.URL+"/healthz") || !strings.Contains(err.Error(), "follows no redirects") {
		t.Errorf("readiness through a redirect: %v", err)
	}
	tgt.hitsURL = redirect.URL + "/debug/chaoskit/faults"
	if _, _, err := tgt.hits(context.Background()); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("hits through a redirect: %v", err)
	}
	s := &sampler{url: redirect.URL + "/state", client: tgt.client}
	if _, err := s.sample(context.Background()); err == nil || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("state through a redirect: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

func TestRollbackOfARecordNamingAnotherMachine(t *testing.T) {
	// A fault record edited to name another machine's endpoint: rollback
	// refuses before it sends anything, at once.
	start := time.Now()
	_, err := rollbackRecord(context.Background(), faultRecord{Control: "http://192.0.2.7:7070", Points: []string{"example.com/svc/p"}}, nil)
	if err == nil || !errors.Is(err, errNotLoopback) || !strings.Contains(err.Error(), "was the record edited?") {
		t.Errorf("rollback of 192.0.2.7: %v", err)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("refusing took %v", took)
	}
}

func TestLoadRequestsInFlightEndWhenTheRunStops(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // a service that hangs
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	stop, cancel := context.WithCancel(context.Background())
	c, done := newClient(stop, plan.Load{Timeout: plan.Duration(time.Minute)}, nil, nil)
	defer done()
	errs := make(chan error, 1)
	go func() {
		resp, err := c.Get(srv.URL)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case err := <-errs:
		if err == nil || time.Since(start) > time.Second {
			t.Errorf("request after the stop: %v after %v", err, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a request in flight outlived the run's stop")
	}
	if _, err := c.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "the run stopped") {
		t.Errorf("a request after the stop: %v", err)
	}
}
