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
