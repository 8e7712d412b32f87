package timeline

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/chaoskit/chaoskit/internal/outdir"
)

// FileName is the name of the timeline file inside a run directory.
const FileName = "timeline.jsonl"

// record is one line of the on-disk form: exactly one field is set.
type record struct {
	Meta    *Meta    `json:"meta,omitempty"`
	Request *Request `json:"request,omitempty"`
	Event   *Event   `json:"event,omitempty"`
}

// Writer streams a timeline as JSON lines. Events are flushed at once;
// requests are buffered and flushed with the next event or by Flush, so a
// crash loses at most the requests since the last event. It is safe for
// concurrent use.
//
// The first error writing to the underlying writer (a full disk) is kept:
// that call and every later one return it, and nothing more is written, so
// the record on disk ends where it became untrue rather than with a gap.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf *bufio.Writer
	enc *json.Encoder
	err error
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	buf := bufio.NewWriterSize(w, 64<<10)
	return &Writer{w: w, buf: buf, enc: json.NewEncoder(buf)}
}

// Err returns the first write error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Writer) write(r record, flush bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.enc.Encode(r); err != nil {
		w.err = err
		return err
	}
	if flush {
		w.err = w.buf.Flush()
	}
	return w.err
}

// Meta writes the run's metadata; it comes first.
func (w *Writer) Meta(m Meta) error { return w.write(record{Meta: &m}, true) }

// Request records one request.
func (w *Writer) Request(r *Request) error { return w.write(record{Request: r}, false) }

// Event records one event and flushes everything recorded so far.
func (w *Writer) Event(e Event) error { return w.write(record{Event: &e}, true) }

// Flush writes out buffered requests.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	return w.err
}

// Close writes out buffered requests, syncs the underlying writer to
// stable storage when it can be (an *os.File) and closes it when it is an
// io.Closer. It returns the first error of the Writer's life: a timeline
// Close accepts is complete on disk.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	if s, ok := w.w.(interface{ Sync() error }); ok && w.err == nil {
		w.err = s.Sync()
	}
	if c, ok := w.w.(io.Closer); ok {
		if err := c.Close(); err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}

// Bounds of a timeline as read back, near the most a Writer writes: a run
// directory may come from elsewhere, and a file past them is refused, not
// read into memory. A line holds one record (a request with its kept body,
// an event with a metrics sample); a run records a few events a second and,
// in the exported form, one line per request.
const (
	// MaxLine bounds one line.
	MaxLine = 8 << 20
	// MaxRecords bounds the lines of a timeline.
	MaxRecords = 32 << 20
	// MaxBytes bounds a timeline file.
	MaxBytes = 4 << 30
)

// maxBytes is MaxBytes, lowered by tests.
var maxBytes int64 = MaxBytes

func tooLarge(limit int64) error {
	return fmt.Errorf("the timeline is larger than %s, more than chaoskit records", outdir.Bytes(limit))
}

// LineError is an error of one line of a timeline.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("timeline line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Read decodes a timeline written by a Writer. A last line cut short by a
// crash is ignored; any other malformed line is an error naming its line
// (a *LineError), and so is a timeline past MaxLine, MaxRecords or
// MaxBytes.
func Read(r io.Reader) (*Timeline, error) {
	t := &Timeline{}
	cr := &countReader{r: io.LimitReader(r, maxBytes+1)}
	sc := bufio.NewScanner(cr)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending
		}
		if cr.n > maxBytes {
			return nil, &LineError{line, tooLarge(maxBytes)}
		}
		if line > MaxRecords {
			return nil, &LineError{line, fmt.Errorf("the timeline holds more than %d lines, more than chaoskit records", MaxRecords)}
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			// Only tolerated if it is the very last line.
			pending = &LineError{line, err}
			continue
		}
		switch {
		case rec.Meta != nil:
			t.Meta = *rec.Meta
		case rec.Request != nil:
			t.Requests = append(t.Requests, *rec.Request)
		case rec.Event != nil:
			t.Events = append(t.Events, *rec.Event)
			if rec.Event.Kind == RunEnd {
				t.Complete = true
			}
		default:
			return nil, &LineError{line, errors.New("empty record")}
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, &LineError{line + 1, fmt.Errorf("a line longer than %d MiB, more than chaoskit writes", MaxLine>>20)}
	} else if err != nil {
		return nil, err
	}
	if cr.n > maxBytes {
		return nil, &LineError{line, tooLarge(maxBytes)}
	}
	if t.Meta.Scenario == "" && len(t.Requests) == 0 && len(t.Events) == 0 {
		return nil, errors.New("timeline is empty")
	}
	return t, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ReadFile reads the whole timeline stored at path into memory: the meta
// and events of a FileName and, when the compact request stream
// (RequestsFile) lies beside it, its requests too. Judging a long run
// streams instead (OpenDir).
func ReadFile(path string) (*Timeline, error) {
	if filepath.Base(path) == FileName {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), RequestsFile)); err == nil {
			return Load(filepath.Dir(path))
		}
	}
	return readLines(path)
}

// readLines reads the JSON lines at path, a regular file (a link there is
// not followed: a run directory is data). An error of a line names the
// file and the line, as path:line.
func readLines(path string) (*Timeline, error) {
	f, err := outdir.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	var le *LineError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%s:%d: %w", path, le.Line, le.Err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Export writes the run src records as JSON lines, in the form Read reads
// (and `chaoskit report` reads from a run directory's FileName): the meta,
// then every request, then every event. It is how a run leaves the compact
// form for tools that read JSON (jq, a notebook): `chaoskit export DIR`.
func Export(src Source, w io.Writer) error {
	jw := NewWriter(w)
	head := src.Head()
	if err := jw.Meta(head.Meta); err != nil {
		return err
	}
	err := src.EachRequest(func(r *Request) error { return jw.Request(r) })
	if err != nil {
		return err
	}
	for _, e := range head.Events {
		if err := jw.Event(e); err != nil {
			return err
		}
	}
	return jw.Flush()
}
