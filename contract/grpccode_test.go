package contract

import (
	"testing"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestGRPCCodePredicate: grpc_code is the name of the code a gRPC call
// was answered with, read from its Grpc-Status header; "" for a request
// without one (an HTTP request, a call with no answer).
func TestGRPCCodePredicate(t *testing.T) {
	tl := build(200, func(i int) bool { return i%20 == 0 }, 10)
	for i := range tl.Requests {
		r := &tl.Requests[i]
		switch {
		case r.Phase == "fault" && r.Status == 503:
			r.Headers = map[string]string{timeline.GRPCStatusHeader: "14"}
		case r.Phase == "fault" && i%40 == 1:
			r.Headers = nil // no answer
		default:
			r.Headers = map[string]string{timeline.GRPCStatusHeader: "0"}
		}
	}
	tests := []struct {
		expect   string
		want     Outcome
		measured string
	}{
		{`grpc_code == "OK" for >= 99%`, Fail, "92.5% (185/200)"},
		{`grpc_code == "UNAVAILABLE" for <= 5%`, Pass, "5% (10/200)"},
		{`grpc_code == "" for <= 2.5%`, Pass, "2.5% (5/200)"},
	}
	for _, tt := range tests {
		c, err := Compile(conv(Spec{Name: "grpc", Phase: "fault", Expect: []string{tt.expect}}))
		if err != nil {
			t.Fatal(err)
		}
		if v := c.Evaluate(tl); v.Outcome != tt.want || v.Measured != tt.measured {
			t.Errorf("%s: verdict %s measured %q (reason %q); want %s %q", tt.expect, v.Outcome, v.Measured, v.Reason, tt.want, tt.measured)
		}
	}
	if got := (&timeline.Request{Headers: map[string]string{timeline.GRPCStatusHeader: "99"}}).GRPCCode(); got != "CODE(99)" {
		t.Errorf("code 99: %q", got)
	}
}
