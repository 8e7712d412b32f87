package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

func TestShortfallMakesInconclusive(t *testing.T) {
	none := func(int) bool { return false }
	for _, tt := range []struct {
		name          string
		planned, sent any
		want          Outcome
	}{
		{"delivered", uint64(200), int64(200), Pass},
		{"just enough", uint64(200), int64(160), Pass},
		{"fell behind", uint64(200), int64(150), Inconclusive},
		{"read back from disk", float64(200), float64(100), Inconclusive},
		{"no record", nil, nil, Pass},
		{"held back by a slow service", uint64(200), int64(100), Pass},
	} {
		tl := build(200, none, 10)
		for i, e := range tl.Events {
			if e.Kind == timeline.PhaseEnd && e.Phase == "fault" && tt.planned != nil {
				tl.Events[i].Data = map[string]any{timeline.PlannedRequests: tt.planned, timeline.SentRequests: tt.sent}
				if strings.HasPrefix(tt.name, "held back") {
					// Every worker waited on the service: 200 requests of the
					// phase are in flight at once, as many as max_workers.
					tl.Events[i].Data[timeline.MaxWorkers] = 200
					for j := range tl.Requests {
						if tl.Requests[j].Phase == "fault" {
							tl.Requests[j].Latency = 2 * time.Second
						}
					}
				}
			}
		}
		c, _ := Compile(Spec{Name: "c", Phase: "fault", Expect: []string{`status == 200 for >= 99%`}})
		v := c.Evaluate(tl)
		if v.Outcome != tt.want {
			t.Errorf("%s: %s (%s), want %s", tt.name, v.Outcome, v.Reason, tt.want)
		}
		if tt.want == Inconclusive && !strings.Contains(v.Reason, "load generator sent") {
			t.Errorf("%s: reason %q", tt.name, v.Reason)
		}
	}
}
