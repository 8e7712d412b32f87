package contract

import (
	"testing"
	"time"
)

func TestFaultLabels(t *testing.T) {
	t0 := time.Unix(1000, 0)
	spans := []FaultSpan{
		{Point: "github.com/x/store/productQuery", Term: `return("github.com/x/store/productQuery|timeout")`, On: t0, Off: t0.Add(time.Second)},
		{Point: "proxy/postgres", Term: "proxy postgres latency 300ms ±50ms", On: t0, Off: t0.Add(time.Second)},
		{Point: "process/target", Term: "process target kill for 500ms", On: t0.Add(2 * time.Second), Off: t0.Add(3 * time.Second)},
		{Point: "proxy/redis", On: t0, Off: t0.Add(time.Second)}, // no term recorded: its point
	}
	tests := []struct {
		at   time.Duration
		want []string
	}{
		{500 * time.Millisecond, []string{"github.com/x/store/productQuery", "proxy postgres latency 300ms ±50ms", "proxy/redis"}},
		{2500 * time.Millisecond, []string{"process target kill for 500ms"}},
		{4 * time.Second, nil},
	}
	for _, tt := range tests {
		got := faultLabelsAt(spans, t0.Add(tt.at))
		if len(got) != len(tt.want) {
			t.Errorf("at +%v: %q, want %q", tt.at, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("at +%v: %q, want %q", tt.at, got, tt.want)
				break
			}
		}
	}
	// What predicates see stays the points.
	if got := faultsAt(spans, t0.Add(500*time.Millisecond)); got[1] != "proxy/postgres" {
		t.Errorf("faults a predicate sees: %q", got)
	}
}
