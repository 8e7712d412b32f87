package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var errFull = errors.New("no space left on device")

// disk takes limit bytes and then fails every write, as a full disk does;
// it records Sync and Close.
type disk struct {
	buf            bytes.Buffer
	limit          int
	synced, closed bool
}

func (d *disk) Write(p []byte) (int, error) {
	room := d.limit - d.buf.Len()
	if len(p) > room {
		d.buf.Write(p[:max(room, 0)])
		return max(room, 0), errFull
	}
	return d.buf.Write(p)
}

func (d *disk) Sync() error  { d.synced = true; return nil }
func (d *disk) Close() error { d.closed = true; return nil }

func TestWriterReportsAFullDisk(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		limit int
		full  bool
	}{
		{"room for all", 1 << 20, false},
		{"full mid-run", 20 << 10, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &disk{limit: tt.limit}
			w := NewWriter(d)
			var first error
			note := func(err error) {
				if first == nil {
					first = err
				}
			}
			note(w.Meta(Meta{Scenario: "s", Start: t0}))
			for i := range 1000 {
				note(w.Request(&Request{Seq: uint64(i + 1), Phase: "a", Time: t0, Method: "GET", Target: fmt.Sprintf("GET /items/%d", i), Status: 200}))
				if i%100 == 99 {
					note(w.Event(Event{Time: t0, Kind: State, Message: "sample"}))
				}
			}
			note(w.Event(Event{Time: t0, Kind: RunEnd}))
			err := w.Close()
			if !tt.full {
				if first != nil || err != nil || !d.synced || !d.closed {
					t.Fatalf("first error %v, Close %v, synced %v, closed %v", first, err, d.synced, d.closed)
				}
				return
			}
			if !errors.Is(first, errFull) || !errors.Is(err, errFull) || !errors.Is(w.Err(), errFull) {
				t.Fatalf("the full disk went unreported: first %v, Close %v, Err %v", first, err, w.Err())
			}
			if d.synced {
				t.Error("a timeline whose writes failed was synced as if complete")
			}
			if !d.closed {
				t.Error("not closed")
			}
			// What reached the disk reads back, up to where it stopped.
			tl, rerr := Read(strings.NewReader(d.buf.String()))
			if rerr != nil || tl.Complete || len(tl.Requests) == 0 || len(tl.Requests) >= 1000 {
				t.Errorf("read back %v requests, complete %v, %v", len(tl.Requests), tl != nil && tl.Complete, rerr)
			}
		})
	}
}
