package timeline

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// sample makes n requests of a typical run: a few targets, a few bodies,
// one header set, now and then an error with a unique port in it.
func sample(n int) ([]Request, [][]byte) {
	t0 := time.Unix(1_700_000_000, 123)
	var reqs []Request
	var bodies [][]byte
	for i := range n {
		q := Request{Seq: uint64(i + 1), Phase: []string{"warmup", "fault"}[i*2/n], Time: t0.Add(time.Duration(i) * 97 * time.Microsecond),
			Method: "GET", Target: fmt.Sprintf("GET /products/%d", i%7), Status: 200, Latency: time.Duration(150+i%50) * time.Microsecond,
			Headers: map[string]string{"X-Chaoskit-Source": "db", "Content-Type": "application/json"}}
		q.URL = "http://127.0.0.1:8080" + strings.TrimPrefix(q.Target, "GET ")
		body := []byte(fmt.Sprintf(`{"id":%d,"price_cents":%d}`, i%7, 100+i%7))
		switch {
		case i%101 == 0:
			q.Status, q.Error, body = 0, fmt.Sprintf("read tcp 127.0.0.1:%d->127.0.0.1:8080: connection reset by peer", 30000+i), nil
			q.Headers = nil
		case i%37 == 0:
			q.Tags = []string{"read", "hot"}
			q.URL = "http://elsewhere" + strings.TrimPrefix(q.Target, "GET ")
		}
		reqs = append(reqs, q)
		bodies = append(bodies, body)
	}
	return reqs, bodies
}

func writeAll(t *testing.T, reqs []Request, bodies [][]byte) *bytes.Buffer {
	buf, _ := writeFrames(t, reqs, bodies)
	return buf
}

// writeFrames writes reqs, a frame every 1000, and returns where each
// frame ends.
func writeFrames(t *testing.T, reqs []Request, bodies [][]byte) (*bytes.Buffer, []int) {
	t.Helper()
	var buf bytes.Buffer
	var ends []int
	w := NewRequestWriter(&buf, "http://127.0.0.1:8080")
	for i := range reqs {
		q := reqs[i]
		if err := w.Add(&q, bodies[i]); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			ends = append(ends, buf.Len())
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, ends
}

func readAll(t *testing.T, data []byte) ([]Request, bool) {
	t.Helper()
	var got []Request
	cut, err := readRequests(bytes.NewReader(data), "http://127.0.0.1:8080", func(r *Request) error {
		got = append(got, *r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, cut
}

// want is what a reader gives back for reqs: bodies, their sizes and
// hashes filled in.
func want(reqs []Request, bodies [][]byte) []Request {
	out := make([]Request, len(reqs))
	for i, q := range reqs {
		q.Body, q.BodySize = string(bodies[i]), len(bodies[i])
		if len(bodies[i]) > MaxBody {
			q.Body = ""
		}
		q.BodyHash = ""
		out[i] = q
	}
	return out
}

func stripHashes(reqs []Request) []Request {
	for i := range reqs {
		if reqs[i].BodySize > 0 && len(reqs[i].BodyHash) != 64 {
			panic("a body without its SHA-256")
		}
		reqs[i].BodyHash = ""
	}
	return reqs
}

func TestRequestStreamRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), MaxBody+1)
	tests := []struct {
		name    string
		n       int
		entries int // table bound, to reach the inline path
		edit    func([]Request, [][]byte)
	}{
		{name: "typical", n: 10_000, entries: 1 << 16},
		{name: "tables full: strings and bodies inline", n: 3000, entries: 4},
		{name: "a body over MaxBody keeps its size and hash", n: 50, entries: 1 << 16, edit: func(_ []Request, b [][]byte) { b[3], b[9] = big, big }},
		{name: "template names, with tags and without", n: 100, entries: 1 << 16, edit: func(r []Request, _ [][]byte) {
			for i := range r {
				switch i % 3 {
				case 0:
					r[i].Template, r[i].Tags = "create-link", []string{"create", "write"}
				case 1:
					r[i].Template, r[i].Tags = "read.v2", nil
				}
			}
		}},
		{name: "template names inline", n: 100, entries: 4, edit: func(r []Request, _ [][]byte) {
			for i := range r {
				r[i].Template = fmt.Sprintf("t%d", i)
			}
		}},
		{name: "seq with gaps", n: 100, entries: 1 << 16, edit: func(r []Request, _ [][]byte) {
			for i := range r {
				r[i].Seq = uint64(10 + 3*i)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(n int) { maxTableEntries = n }(maxTableEntries)
			maxTableEntries = tt.entries
			reqs, bodies := sample(tt.n)
			if tt.edit != nil {
				tt.edit(reqs, bodies)
			}
			buf := writeAll(t, reqs, bodies)
			got, cut := readAll(t, buf.Bytes())
			if cut {
				t.Fatal("a whole stream read as cut")
			}
			exp := want(reqs, bodies)
			got = stripHashes(got)
			if len(got) != len(exp) {
				t.Fatalf("read %d requests, wrote %d", len(got), len(exp))
			}
			for i := range exp {
				if !reflect.DeepEqual(normal(got[i]), normal(exp[i])) {
					t.Fatalf("request %d:\n got %+v\nwant %+v", i, got[i], exp[i])
				}
			}
		})
	}
}

// normal puts times in one location, for DeepEqual.
func normal(r Request) Request {
	r.Time = time.Unix(0, r.Time.UnixNano())
	return r
}

// TestRequestStreamCompact holds the common case to its budget: at most
// 48 bytes a request on disk (docs/scenarios.md states the figure).
func TestRequestStreamCompact(t *testing.T) {
	reqs, bodies := sample(50_000)
	buf := writeAll(t, reqs, bodies)
	per := float64(buf.Len()) / float64(len(reqs))
	t.Logf("%.1f bytes per request", per)
	if per > 48 {
		t.Fatalf("%.1f bytes per request on disk, want at most 48", per)
	}
}

func TestRequestStreamCut(t *testing.T) {
	reqs, bodies := sample(5000) // 5 frames of 1000
	buf, ends := writeFrames(t, reqs, bodies)
	data := buf.Bytes()
	for _, cut := range []int{1, 7, (ends[4] - ends[3]) / 2, ends[4] - ends[3] - 1} {
		got, wasCut := readAll(t, data[:len(data)-cut])
		if !wasCut || len(got) != 4000 {
			t.Errorf("cut %d bytes: read %d requests (cut %v), want the 4000 of the whole frames", cut, len(got), wasCut)
		}
	}
	if got, wasCut := readAll(t, data[:ends[3]]); wasCut || len(got) != 4000 {
		t.Errorf("cut at a frame's end: read %d requests (cut %v), want 4000, not cut", len(got), wasCut)
	}
	// A corrupt frame in the middle is an error, not an end.
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0xff
	_, err := readRequests(bytes.NewReader(bad), "", func(*Request) error { return nil })
	if err == nil {
		t.Fatal("a corrupt middle frame read without error")
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a corrupt middle frame: %v, want ErrCorrupt", err)
	}
}

// TestADecompressionBombIsRefusedInBoundedMemory reads a requests file of
// a few kilobytes whose one CBOR string declares 1 GiB (and whose zstd
// stream expands to 200 MiB of zeros): the reader refuses it as corrupt
// its memory grown by under 100 MB, within 2 s.
func TestADecompressionBombIsRefusedInBoundedMemory(t *testing.T) {
	var file bytes.Buffer
	zw, _ := zstd.NewWriter(&file, zstd.WithEncoderLevel(zstd.SpeedFastest))
	zw.Write([]byte{0x81, 0x7a, 0x40, 0, 0, 0}) // [ text string of 1 GiB
	zeros := make([]byte, 1<<20)
	for range 200 {
		zw.Write(zeros)
	}
	zw.Close()
	if file.Len() > 100<<10 {
		t.Fatalf("the bomb is %d bytes", file.Len())
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := readRequests(bytes.NewReader(file.Bytes()), "", func(*Request) error { return nil })
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("err = %v, want ErrCorrupt", err)
	}
	// Sys is the memory the Go runtime got from the system: what the
	// process's size grew by.
	if grew := int64(after.Sys) - int64(before.Sys); grew > 100<<20 {
		t.Errorf("reading the bomb took %d MB of memory", grew>>20)
	}
	t.Logf("memory grown %d MB, allocated %d MB, in %v", (int64(after.Sys)-int64(before.Sys))>>20, (after.TotalAlloc-before.TotalAlloc)>>20, took)
	if took > 2*time.Second {
		t.Errorf("reading the bomb took %v", took)
	}
}
