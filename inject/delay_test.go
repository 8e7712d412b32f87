package inject

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// TestLatencyDistributionApplied fires a marker's log-normal latency fault
// (median 20ms, p99 200ms) for 5,000 calls and checks the quantiles of the
// delays Fire applied, as it recorded them, within 10 % of the fault's.
// The delays are the timers Fire set, not wall clock, so a busy machine
// does not move them; the calls run at once so the test takes about the
// longest delay.
func TestLatencyDistributionApplied(t *testing.T) {
	term, err := Fault{Action: Latency, Value: "lognormal/20ms/200ms"}.Term(pt)
	if err != nil {
		t.Fatal(err)
	}
	value := pt + "|latency:lognormal/20ms/200ms"
	if term != `return("`+value+`")` {
		t.Fatalf("term %s", term)
	}
	var wg sync.WaitGroup
	for i := 0; i < 5000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Fire(context.Background(), value); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rec := Delays("lognormal/20ms/200ms")
	if rec == nil || rec.Count() != 5000 {
		t.Fatalf("recorded %v", rec)
	}
	for q, want := range map[float64]time.Duration{0.5: 20 * time.Millisecond, 0.99: 200 * time.Millisecond} {
		if got := rec.Quantile(q); math.Abs(float64(got-want)) > 0.1*float64(want) {
			t.Errorf("p%g of the applied delays = %v, want %v ±10%%", q*100, got, want)
		}
	}
}
