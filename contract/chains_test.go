package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// TestChainLossesAreNeverAPass: a window whose selection lost steps of
// request chains (never sent: the capture they needed was missing) does
// not pass on the requests that were left (nor does one over the steps
// after the one the chains stopped before); a fail of those stands; a
// window that selects no lost step is judged as before; and count counts
// only the requests that were sent.
func TestChainLossesAreNeverAPass(t *testing.T) {
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "links", Start: t0}}
	tl.Events = append(tl.Events, timeline.Event{Time: t0, Kind: timeline.PhaseStart, Phase: "p", Planned: time.Second})
	for i := range 60 {
		tpl, target, status := "link-lifecycle/create", "POST /api/links", 201
		if i%2 == 1 {
			tpl, target, status = "link-lifecycle/read", "GET /c1", 200
			if i >= 50 {
				status = 404
			}
		}
		tl.Requests = append(tl.Requests, timeline.Request{Seq: uint64(i + 1), Phase: "p", Time: t0.Add(time.Duration(i) * 10 * time.Millisecond),
			Method: target[:strings.Index(target, " ")], Target: target, URL: "http://127.0.0.1:1" + target[strings.Index(target, " ")+1:],
			Status: status, Latency: time.Millisecond, Template: tpl, Tags: []string{"links"}})
	}
	stop := timeline.Event{Time: t0.Add(time.Second), Kind: timeline.ChainStop, Phase: "p",
		Message: "12 iterations of chain link-lifecycle stopped before read: capture code missing (create got 500 ×9, create got no response ×3)",
		Data: map[string]any{timeline.ChainTemplate: "link-lifecycle/read", timeline.ChainCapture: "code", timeline.ChainCount: 12.0,
			timeline.ChainLost: []any{
				map[string]any{timeline.ChainTemplate: "link-lifecycle/read", timeline.ChainMethod: "GET", timeline.ChainPath: "/{capture.code}", timeline.ChainTags: []any{"links"}},
				map[string]any{timeline.ChainTemplate: "link-lifecycle/delete", timeline.ChainMethod: "DELETE", timeline.ChainPath: "/api/links/{capture.code}", timeline.ChainTags: []any{"links"}},
			}}}
	tl.Events = append(tl.Events, stop, timeline.Event{Time: t0.Add(time.Second), Kind: timeline.PhaseEnd, Phase: "p"})
	tests := []struct {
		name   string
		filter Filter
		expect string
		want   Outcome
		lost   bool
	}{
		{"a pass over the reads that were sent", Filter{Template: "link-lifecycle/read"}, "count >= 20", Inconclusive, true},
		{"count counts the reads sent", Filter{Template: "link-lifecycle/read"}, "count >= 31", Fail, true},
		{"a fail of the reads that were sent", Filter{Template: "link-lifecycle/read"}, "status 4xx <= 1%", Fail, true},
		{"by tag and path", Filter{Tag: "links", Path: "/*"}, "status 5xx <= 1%", Inconclusive, true},
		{"the whole phase", Filter{}, "status 5xx <= 1%", Inconclusive, true},
		{"the deletes after the stopped reads", Filter{Template: "link-lifecycle/delete"}, "status 5xx <= 1%", Inconclusive, true},
		{"the creates lost nothing", Filter{Template: "link-lifecycle/create"}, "status 5xx <= 1%", Pass, false},
		{"another method lost nothing", Filter{Method: "POST"}, "count >= 30", Pass, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Compile(Spec{Name: "c", Phase: "p", Requests: tt.filter, MinSamples: 1, Expect: []string{tt.expect}})
			if err != nil {
				t.Fatal(err)
			}
			v := c.Evaluate(tl)
			if v.Outcome != tt.want {
				t.Errorf("%s, want %s (%s; %s)", v.Outcome, tt.want, v.Measured, v.Reason)
			}
			// The loss is said once: in the reason of an inconclusive
			// verdict, in a note of a fail.
			said := v.Reason + " " + strings.Join(v.Notes, " ")
			noted := strings.Contains(said, "lost 12 requests that stopped chains never sent") &&
				strings.Contains(said, "stopped before read: capture code missing (create got 500 ×9, create got no response ×3)")
			if noted != tt.lost || strings.Count(said, "lost 12 requests") > 1 {
				t.Errorf("reason %q, notes %q: want the loss said once: %v", v.Reason, v.Notes, tt.lost)
			}
			if tt.want == Fail && tt.lost && len(v.Notes) == 0 {
				t.Errorf("a fail does not note the loss")
			}
		})
	}
}
