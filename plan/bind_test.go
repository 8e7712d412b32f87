package plan

import "testing"

// Bind replaces the service and keeps what the scenario says of its
// target besides, and what loading derived.
func TestBind(t *testing.T) {
	sc := &Scenario{Target: Target{Demo: &DemoTarget{}, Hits: "/hits", Points: []string{"a/b"}, State: &StateProbe{Path: "/state"}},
		conventions: Conventions{SourceHeader: "X-Source"}}
	sc.Bind(Target{URL: "http://127.0.0.1:9000", Failpoints: "127.0.0.1:9001"})
	tg := sc.Target
	if tg.Demo != nil || tg.URL != "http://127.0.0.1:9000" || tg.Failpoints != "127.0.0.1:9001" {
		t.Errorf("service not replaced: %+v", tg)
	}
	if tg.Hits != "/hits" || len(tg.Points) != 1 || tg.State == nil || tg.State.Path != "/state" {
		t.Errorf("probes lost: %+v", tg)
	}
	if cls := sc.Classification(); cls.SourceHeader != "X-Source" {
		t.Errorf("the profile's conventions lost: %+v", cls)
	}
}
