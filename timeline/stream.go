package timeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/internal/outdir"
)

// Source is a recorded run as the stages after the runner read it: its
// meta and events held in memory (they are few), its requests streamed, so
// that judging a run of any length takes memory independent of its length.
// *Timeline (in memory) and *Stream (a run directory) are Sources.
type Source interface {
	// Head returns the run's meta and events. Its Requests may be empty
	// even when the run has requests: read those with EachRequest.
	Head() *Timeline
	// EachRequest calls fn for each request, in the order recorded (the
	// order responses completed), and stops at fn's first error. The
	// *Request is valid only during the call: copy what you keep.
	EachRequest(fn func(*Request) error) error
}

// Head returns t itself.
func (t *Timeline) Head() *Timeline { return t }

// EachRequest calls fn for each of t.Requests.
func (t *Timeline) EachRequest(fn func(*Request) error) error {
	for i := range t.Requests {
		if err := fn(&t.Requests[i]); err != nil {
			return err
		}
	}
	return nil
}

// Stream is a run directory opened for reading: the meta and events of
// FileName in memory, the requests of RequestsFile read from disk on each
// pass. A run directory written before the compact form (requests as
// lines of FileName) reads too: its requests are held in memory.
type Stream struct {
	head Timeline
	dir  string
	// compact is true when the directory holds RequestsFile.
	compact bool
	// Cut is true when the request stream's last frame was cut short (the
	// recording process died while writing it); set after a full pass.
	Cut bool
}

// OpenDir opens the run recorded in dir.
func OpenDir(dir string) (*Stream, error) {
	path := filepath.Join(dir, FileName)
	head, err := readLines(path)
	if err != nil {
		return nil, err
	}
	s := &Stream{head: *head, dir: dir}
	if _, err := os.Stat(filepath.Join(dir, RequestsFile)); err == nil {
		s.compact = true
	}
	// A phase that started and never ended (the run was killed) ends at
	// its last response: that takes a pass over the requests.
	if s.compact && head.unended() {
		s.head.lastEnd = map[string]time.Time{}
		err := s.EachRequest(func(r *Request) error {
			if e := r.End(); e.After(s.head.lastEnd[r.Phase]) {
				s.head.lastEnd[r.Phase] = e
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// unended reports whether a phase started and has no end event.
func (t *Timeline) unended() bool {
	started := map[string]bool{}
	for _, e := range t.Events {
		switch e.Kind {
		case PhaseStart:
			started[e.Phase] = true
		case PhaseEnd:
			delete(started, e.Phase)
		}
	}
	return len(started) > 0
}

// Head returns the run's meta and events (and, for a run directory written
// before the compact form, its requests).
func (s *Stream) Head() *Timeline { return &s.head }

// Dir is the run directory.
func (s *Stream) Dir() string { return s.dir }

// EachRequest reads the run's requests from disk and calls fn for each.
func (s *Stream) EachRequest(fn func(*Request) error) error {
	if err := s.head.EachRequest(fn); err != nil {
		return err
	}
	if !s.compact {
		return nil
	}
	path := filepath.Join(s.dir, RequestsFile)
	f, err := outdir.Open(path) // a link there is not followed
	if err != nil {
		return err
	}
	defer f.Close()
	cut, err := readRequests(f, s.head.Meta.BaseURL, fn)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("%s: %w", path, err)
		}
		return err
	}
	s.Cut = cut
	return nil
}

// Load reads the whole run recorded in dir into memory, requests included:
// for short runs (tests, fuzz trials) and for export. Judging streams
// instead (OpenDir).
func Load(dir string) (*Timeline, error) {
	s, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	tl := s.head
	tl.Requests = nil
	err = s.EachRequest(func(r *Request) error {
		tl.Requests = append(tl.Requests, *r)
		return nil
	})
	return &tl, err
}
