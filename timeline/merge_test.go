package timeline

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// writeRun writes a run directory: meta, events, and requests sent every
// step from start, the i-th with seq i+1.
func writeRun(t *testing.T, dir string, meta Meta, events []Event, start time.Time, step time.Duration, n int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(f)
	w.Meta(meta)
	for _, e := range events {
		w.Event(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	q, err := os.Create(filepath.Join(dir, RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	rw := NewRequestWriter(q, meta.BaseURL)
	for i := range n {
		r := Request{Seq: uint64(i + 1), Phase: "p", Time: start.Add(time.Duration(i) * step), Method: "GET", Target: "GET /x", Status: 200, Latency: time.Millisecond}
		if err := rw.Add(&r, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMergeShards(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	dir := t.TempDir()
	phase := func(start, end time.Duration, planned, sent float64) []Event {
		return []Event{{Time: t0.Add(start), Kind: PhaseStart, Phase: "p"},
			{Time: t0.Add(end), Kind: PhaseEnd, Phase: "p", Data: map[string]any{PlannedRequests: planned, SentRequests: sent}}}
	}
	one := append(phase(0, time.Second, 50, 50),
		Event{Time: t0.Add(100 * time.Millisecond), Kind: FaultOn, Phase: "p", Point: "a/b"},
		Event{Time: t0.Add(2 * time.Second), Kind: ReadBack, Read: &ReadBackResult{Write: 3}},
		Event{Time: t0.Add(2 * time.Second), Kind: RunEnd, Message: "completed"})
	two := append(phase(10*time.Millisecond, 1010*time.Millisecond, 50, 49), Event{Time: t0.Add(2 * time.Second), Kind: RunEnd, Message: "completed"})
	// Shard 2 is listed first: the merge puts the run that switched the
	// faults first anyway.
	writeRun(t, filepath.Join(dir, "s2"), Meta{Scenario: "s", Shard: "2/2"}, two, t0.Add(10*time.Millisecond), 20*time.Millisecond, 49)
	writeRun(t, filepath.Join(dir, "s1"), Meta{Scenario: "s", Shard: "1/2"}, one, t0, 20*time.Millisecond, 50)
	m, err := Merge([]string{filepath.Join(dir, "s2"), filepath.Join(dir, "s1")})
	if err != nil {
		t.Fatal(err)
	}
	head := m.Head()
	ph := head.Phases()
	if len(ph) != 1 || !ph[0].Start.Equal(t0) || !ph[0].End.Equal(t0.Add(1010*time.Millisecond)) {
		t.Errorf("phases %+v, want one from the earliest start to the latest end", ph)
	}
	var ends, runEnds int
	for _, e := range head.Events {
		switch e.Kind {
		case PhaseEnd:
			ends++
			if e.Data[PlannedRequests] != 100.0 || e.Data[SentRequests] != 99.0 {
				t.Errorf("phase end %v, want the counts added up", e.Data)
			}
		case RunEnd:
			runEnds++
		case ReadBack:
			if e.Read.Write != 5 { // (3-1)·2 + 1: shard 1 of 2 runs
				t.Errorf("read-back of write %d, want 5", e.Read.Write)
			}
		}
	}
	if ends != 1 || runEnds != 1 || !head.Complete {
		t.Errorf("%d phase ends, %d run ends, complete %v", ends, runEnds, head.Complete)
	}
	var seqs []uint64
	var last time.Time
	err = m.EachRequest(func(r *Request) error {
		if r.Time.Before(last) {
			t.Errorf("request %d at %v after one at %v: not in send order", r.Seq, r.Time, last)
		}
		last = r.Time
		seqs = append(seqs, r.Seq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 99 {
		t.Fatalf("%d requests merged, want 99", len(seqs))
	}
	// Interleaved in send order, the numbers are 1, 2, 3, … as one run's.
	want := make([]uint64, 99)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(seqs, want) {
		t.Errorf("merged seqs %v", seqs)
	}

	if _, err := Merge([]string{filepath.Join(dir, "s1"), filepath.Join(dir, "nope")}); err == nil {
		t.Error("a missing run directory merged")
	}
}

// TestExportReadsBack: the JSON lines of Export are a timeline Read takes
// back whole.
func TestExportReadsBack(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	dir := filepath.Join(t.TempDir(), "run")
	events := []Event{{Time: t0, Kind: PhaseStart, Phase: "p"}, {Time: t0.Add(time.Second), Kind: PhaseEnd, Phase: "p"},
		{Time: t0.Add(time.Second), Kind: RunEnd, Message: "completed"}}
	writeRun(t, dir, Meta{Scenario: "s", BaseURL: "http://127.0.0.1:1"}, events, t0, time.Millisecond, 500)
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Export(s, &buf); err != nil {
		t.Fatal(err)
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Requests) != 500 || len(back.Events) != 3 || !back.Complete || back.Meta.Scenario != "s" {
		t.Fatalf("read back %d requests, %d events, complete %v", len(back.Requests), len(back.Events), back.Complete)
	}
	for i := range back.Requests {
		a, b := back.Requests[i], whole.Requests[i]
		if a.Seq != b.Seq || !a.Time.Equal(b.Time) || a.URL != b.URL || a.Target != b.Target || a.Latency != b.Latency {
			t.Fatalf("request %d: exported %+v, recorded %+v", i, a, b)
		}
	}
}
