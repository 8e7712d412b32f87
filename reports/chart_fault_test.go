package reports

import (
	"strings"
	"testing"

	"github.com/chaoskit/chaoskit/contract"
)

func TestFaultNames(t *testing.T) {
	tests := []struct {
		f         contract.FaultTiming
		name      string
		titleHead string
	}{
		{contract.FaultTiming{Point: "github.com/x/store/productQuery", Term: `return("github.com/x/store/productQuery|timeout")`},
			"productQuery (timeout)", "fault productQuery (timeout)\nfailpoint github.com/x/store/productQuery\nterm "},
		{contract.FaultTiming{Point: "proxy/postgres", Term: "proxy postgres latency 300ms ±50ms"},
			"proxy postgres latency 300ms ±50ms", "fault proxy postgres latency 300ms ±50ms\non at"},
		{contract.FaultTiming{Point: "process/target", Term: "process target kill for 500ms"},
			"process target kill for 500ms", "fault process target kill for 500ms\non at"},
	}
	for _, tt := range tests {
		if got := faultName(tt.f); got != tt.name {
			t.Errorf("faultName(%s) = %q, want %q", tt.f.Point, got, tt.name)
		}
		if got := faultTitle(tt.f); !strings.HasPrefix(got, tt.titleHead) {
			t.Errorf("faultTitle(%s) = %q, want it to start %q", tt.f.Point, got, tt.titleHead)
		}
	}
}

// The Faults table says what each fault did in words, not as a failpoint
// term.
func TestFaultWords(t *testing.T) {
	for _, tt := range []struct {
		f    contract.FaultTiming
		want string
	}{
		{contract.FaultTiming{Point: "github.com/x/store/productQuery", Term: `return("github.com/x/store/productQuery|error:database is locked")`},
			"productQuery: error 'database is locked'"},
		{contract.FaultTiming{Point: "github.com/x/store/productQuery", Term: `return("github.com/x/store/productQuery|timeout")`}, "productQuery: timeout"},
		{contract.FaultTiming{Point: "github.com/x/store/productQuery", Term: `50%return("github.com/x/store/productQuery|latency:300ms")`},
			"productQuery: latency 300ms on 50% of calls"},
		{contract.FaultTiming{Point: "github.com/x/store/productQuery", Term: `panic`}, "productQuery: panic"},
		{contract.FaultTiming{Point: "proxy/postgres", Term: "proxy postgres latency 300ms ±50ms"}, "proxy postgres latency 300ms ±50ms"},
	} {
		if got := faultWords(tt.f); got != tt.want {
			t.Errorf("faultWords(%s) = %q, want %q", tt.f.Term, got, tt.want)
		}
	}
}
