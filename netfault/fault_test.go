package netfault_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/netfault"
)

const ms = time.Millisecond

func TestFaultString(t *testing.T) {
	tests := []struct {
		f    netfault.Fault
		want string
	}{
		{netfault.Fault{Proxy: "postgres", Kind: netfault.Latency, Latency: 300 * ms, Jitter: 50 * ms}, "proxy postgres latency 300ms ±50ms"},
		{netfault.Fault{Proxy: "postgres", Kind: netfault.Latency, Latency: time.Second, Direction: netfault.Upstream}, "proxy postgres latency 1s upstream"},
		{netfault.Fault{Proxy: "api", Kind: netfault.Bandwidth, Rate: 100}, "proxy api bandwidth 100KB/s"},
		{netfault.Fault{Proxy: "api", Kind: netfault.SlowClose, Delay: 2 * time.Second}, "proxy api slow_close 2s"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Timeout}, "proxy db timeout (data held)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Timeout, Timeout: 5 * time.Second}, "proxy db timeout (data held, closed after 5s)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.ResetPeer, Probability: 0.25}, "proxy db reset_peer on 25% of connections"},
		{netfault.Fault{Proxy: "db", Kind: netfault.ResetPeer, Timeout: 100 * ms}, "proxy db reset_peer after 100ms"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Slicer, AverageSize: 64, SizeVariation: 16, Delay: 10 * time.Microsecond}, "proxy db slicer 64B ±16B every 10µs"},
		{netfault.Fault{Proxy: "db", Kind: netfault.LimitData, Bytes: 1000}, "proxy db limit_data 1000B"},
		{netfault.Fault{Proxy: "redis", Kind: netfault.Down, Probability: 1}, "proxy redis down"},
	}
	for _, tt := range tests {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
		if err := tt.f.Validate(); err != nil {
			t.Errorf("%s: Validate: %v", tt.want, err)
		}
	}
}

func TestFaultValidate(t *testing.T) {
	tests := []struct {
		f     netfault.Fault
		field string
		msg   string
	}{
		{netfault.Fault{Kind: netfault.Down}, "proxy", "a fault needs the proxy it is on"},
		{netfault.Fault{Proxy: "db", Kind: "latncy"}, "kind", `unknown network fault kind "latncy" (did you mean "latency"?)`},
		{netfault.Fault{Proxy: "db", Kind: "chaos"}, "kind", "(one of latency, bandwidth, slow_close, timeout, reset_peer, slicer, limit_data, down)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Latency}, "latency", "latency must be above 0 (such as latency: 300ms)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Latency, Latency: 1500 * time.Microsecond}, "latency", "latency 1.5ms is not whole milliseconds, which toxiproxy counts in (1ms or 2ms)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Latency, Latency: 10 * ms, Jitter: 20 * ms}, "jitter", "jitter 20ms is above the latency"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Bandwidth, Rate: 10, Jitter: ms}, "jitter", "jitter is not a setting of a bandwidth fault (remove it; a bandwidth fault takes rate)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Down, Bytes: 3}, "bytes", "bytes is not a setting of a down fault (remove it)"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Bandwidth}, "rate", "a bandwidth fault needs a rate above 0"},
		{netfault.Fault{Proxy: "db", Kind: netfault.SlowClose}, "delay", "delay must be above 0"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Timeout, Timeout: -ms}, "timeout", "timeout -1ms is negative"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Slicer}, "average_size", "a slicer needs an average_size above 0"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Slicer, AverageSize: 8, SizeVariation: 8}, "size_variation", "size_variation 8 is out of range (from 0 to 7"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Slicer, AverageSize: 8, Delay: 1500}, "delay", "slicer delay 1.5µs cannot be used (whole microseconds"},
		{netfault.Fault{Proxy: "db", Kind: netfault.LimitData}, "bytes", "a limit_data fault needs bytes above 0"},
		{netfault.Fault{Proxy: "db", Kind: netfault.ResetPeer, Direction: "sideways"}, "direction", `unknown direction "sideways" (upstream or downstream)`},
		{netfault.Fault{Proxy: "db", Kind: netfault.ResetPeer, Probability: 1.5}, "probability", "probability 1.5 is out of range"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Down, Direction: netfault.Upstream}, "direction", "a down proxy has no direction"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Down, Probability: 0.5}, "probability", "a proxy is down for every connection"},
	}
	for _, tt := range tests {
		err := tt.f.Validate()
		var fe *netfault.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Validate(%+v) = %v, want a %s error containing %q", tt.f, err, tt.field, tt.msg)
		}
	}
}
