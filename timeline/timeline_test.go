package timeline

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestWriteReadRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var buf bytes.Buffer
	w := NewWriter(&buf)
	hits := int64(7)
	must(t, w.Meta(Meta{Scenario: "s", Start: t0}))
	must(t, w.Event(Event{Time: t0, Kind: PhaseStart, Phase: "a", Planned: time.Second}))
	must(t, w.Request(&Request{Seq: 1, Phase: "a", Time: t0.Add(time.Millisecond), Method: "GET", Target: "GET /x", Status: 200,
		Latency: 3 * time.Millisecond, Headers: map[string]string{"X-Chaoskit-Source": "db"}, Body: "{}"}))
	must(t, w.Event(Event{Time: t0.Add(time.Second), Kind: FaultHits, Phase: "a", Point: "p", Hits: &hits}))
	must(t, w.Event(Event{Time: t0.Add(time.Second), Kind: PhaseEnd, Phase: "a"}))
	must(t, w.Event(Event{Time: t0.Add(time.Second), Kind: RunEnd}))

	got, err := Read(&buf)
	must(t, err)
	if got.Meta.Scenario != "s" || len(got.Requests) != 1 || len(got.Events) != 4 || !got.Complete {
		t.Fatalf("round trip lost data: %+v", got)
	}
	if h := got.Requests[0].Header("x-chaoskit-source"); h != "db" {
		t.Errorf("Header lookup = %q, want db", h)
	}
	if *got.Events[1].Hits != 7 {
		t.Errorf("hits = %d", *got.Events[1].Hits)
	}
	ph := got.Phases()
	if len(ph) != 1 || ph[0].End.Sub(ph[0].Start) != time.Second || ph[0].Planned != time.Second {
		t.Errorf("phases = %+v", ph)
	}
}

func TestReadToleratesTruncatedLastLine(t *testing.T) {
	in := `{"meta":{"scenario":"s","start":"2026-01-02T03:04:05Z"}}
{"event":{"time":"2026-01-02T03:04:05Z","kind":"phase_start","phase":"a"}}
{"request":{"seq":1,"phase":"a","time":"2026-01-02T03:04:06Z","status":200,"latency_ns":5000000}}
{"request":{"seq":2,"pha`
	got, err := Read(strings.NewReader(in))
	must(t, err)
	if len(got.Requests) != 1 || got.Complete {
		t.Fatalf("got %d requests, complete=%v", len(got.Requests), got.Complete)
	}
	// The unfinished phase ends at its last response.
	ph := got.Phases()
	if want := time.Second + 5*time.Millisecond; ph[0].End.Sub(ph[0].Start) != want {
		t.Errorf("open phase length = %v, want %v", ph[0].End.Sub(ph[0].Start), want)
	}
}

func TestReadRejectsCorruptMiddleLine(t *testing.T) {
	in := "{\"meta\":{\"scenario\":\"s\"}}\nnot json\n{\"event\":{\"kind\":\"run_end\"}}\n"
	if _, err := Read(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("err = %v, want a line 2 error", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
