package netfault_test

import (
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/netfault"
)

// TestLatencyDistributionApplied sends 5,000 round trips through a proxy
// with a log-normal latency fault (median 20ms, p99 200ms) and checks the
// quantiles of the delays the toxic applied to the chunks, as it recorded
// them, within 10 % of the fault's. The recorded delays are those the toxic
// drew and waited for each chunk, not wall clock, so a busy machine does
// not move them; 50 connections in parallel keep the test to a few seconds.
func TestLatencyDistributionApplied(t *testing.T) {
	ps, addr := proxy(t, "db", upstream(t, echo))
	f := netfault.Fault{Proxy: "db", Kind: netfault.Latency, Distribution: "lognormal/20ms/200ms"}
	enable(t, ps, f)
	if got := f.String(); got != "proxy db latency lognormal median 20ms p99 200ms" {
		t.Errorf("String() = %q", got)
	}
	const conns, trips = 50, 100
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 5)
			for range trips {
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.Write([]byte("ping\n")); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rec := ps.Delays(f)
	if rec == nil || rec.Count() != conns*trips {
		t.Fatalf("recorded %v delays, want one a chunk, %d", rec, conns*trips)
	}
	for q, want := range map[float64]time.Duration{0.5: 20 * time.Millisecond, 0.99: 200 * time.Millisecond} {
		if got := rec.Quantile(q); math.Abs(float64(got-want)) > 0.1*float64(want) {
			t.Errorf("p%g of the applied delays = %v, want %v ±10%%", q*100, got, want)
		}
	}
	// Switched off and on again, the fault counts afresh.
	disable(t, ps, f)
	enable(t, ps, f)
	if n := ps.Delays(f).Count(); n != 0 {
		t.Errorf("a fault switched on again starts with %d delays", n)
	}
}

func TestLatencyDistributionRefused(t *testing.T) {
	for _, tt := range []struct {
		f    netfault.Fault
		want string
	}{
		{netfault.Fault{Proxy: "db", Kind: netfault.Latency, Distribution: "lognormal/20ms/10ms"}, "distribution: distribution \"lognormal/20ms/10ms\": p99 10ms is not above the median 20ms"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Latency, Distribution: "gamma/1ms/2ms"}, `unknown distribution "gamma"`},
		{netfault.Fault{Proxy: "db", Kind: netfault.Latency, Latency: time.Millisecond, Distribution: "1ms"}, "not both"},
		{netfault.Fault{Proxy: "db", Kind: netfault.Bandwidth, Rate: 1, Distribution: "1ms"}, "distribution is not a setting of a bandwidth fault"},
	} {
		if err := tt.f.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.f, err, tt.want)
		}
	}
}
