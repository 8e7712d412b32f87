package fault_test

import (
	"testing"

	"github.com/chaoskit/chaoskit/fault"
	_ "github.com/chaoskit/chaoskit/fault/httpproxy"
	_ "github.com/chaoskit/chaoskit/fault/point"
	_ "github.com/chaoskit/chaoskit/fault/process"
	_ "github.com/chaoskit/chaoskit/fault/proxy"
)

// Exactly one source names each fault, whatever the order the sources
// registered in; a fault naming two things goes to a source whose check
// refuses it.
func TestOneSourceNamesEachFault(t *testing.T) {
	for _, tt := range []struct {
		s    fault.Spec
		want string
	}{
		{fault.Spec{Point: "p"}, "point"},
		{fault.Spec{Path: "left/on"}, "point"},
		{fault.Spec{Proxy: "pg"}, "proxy"},
		{fault.Spec{Proxy: "pg", Protocol: "tcp"}, "proxy"},
		{fault.Spec{Proxy: "prices", Protocol: "http"}, "http"},
		{fault.Spec{Proxy: "stock", Protocol: "grpc"}, "http"},
		{fault.Spec{Proxy: "pg", Process: "target"}, "proxy"},
		{fault.Spec{Process: "target"}, "process"},
		{fault.Spec{Process: "target", Point: "p"}, "process"},
	} {
		var named []string
		for _, src := range fault.Sources() {
			if src.Names(&tt.s) {
				named = append(named, src.Name)
			}
		}
		if len(named) != 1 || named[0] != tt.want {
			t.Errorf("%+v is named by %q, want only %s", tt.s, named, tt.want)
		}
		if got := fault.Of(&tt.s).Name; got != tt.want {
			t.Errorf("Of(%+v) = %s, want %s", tt.s, got, tt.want)
		}
	}
}

// A proxy's protocol chooses the source that serves it; tcp is the run's
// own.
func TestServing(t *testing.T) {
	for p, want := range map[string]string{"http": "http", "grpc": "http"} {
		if src := fault.Serving(p); src == nil || src.Name != want || src.Serve == nil {
			t.Errorf("Serving(%s) = %v, want the %s source with Serve", p, src, want)
		}
	}
	if src := fault.Serving("tcp"); src != nil {
		t.Errorf("Serving(tcp) = %s, want none: the run starts TCP proxies itself", src.Name)
	}
	if got := fault.Protocols(); len(got) != 3 || got[0] != "tcp" {
		t.Errorf("Protocols() = %v, want tcp, http, grpc", got)
	}
}
