package writebehind_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/writebehind"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("store down")

// store is a store that can be down; it records what it took, in order,
// once per key (as an idempotent store does) and every Apply call.
type store struct {
	down    atomic.Bool
	mu      sync.Mutex
	keys    []string
	applied []string
}

func (s *store) apply(_ context.Context, e writebehind.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied = append(s.applied, e.Key)
	if s.down.Load() {
		return errDown
	}
	if !slices.Contains(s.keys, e.Key) {
		s.keys = append(s.keys, e.Key)
	}
	return nil
}

func (s *store) stored() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

func open(t *testing.T, path string, st *store, max int) *writebehind.Queue {
	t.Helper()
	q, err := writebehind.Open(writebehind.Settings{Name: "orders", Path: path, Apply: st.apply, MaxPending: max, RetryEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func flush(t *testing.T, q *writebehind.Queue) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q.Kick()
	if err := q.Flush(ctx); err != nil {
		t.Fatalf("flush: %v (%+v)", err, q.Snapshot())
	}
}

// Writes accepted while the store is down are stored in the order they
// were accepted once it is back; a key still pending is accepted once.
func TestReplayInOrderOncePerKey(t *testing.T) {
	st := &store{}
	st.down.Store(true)
	q := open(t, filepath.Join(t.TempDir(), "q"), st, 0)
	defer q.Close()
	for _, k := range []string{"a", "b", "c"} {
		if _, ok, err := q.Enqueue(k, []byte(k)); err != nil || !ok {
			t.Fatalf("enqueue %s: %v %v", k, ok, err)
		}
	}
	if e, ok, err := q.Enqueue("b", []byte("other")); err != nil || ok || string(e.Data) != "b" || e.Seq != 2 {
		t.Fatalf("enqueue of a pending key: %+v %v %v; want the pending entry back", e, ok, err)
	}
	q.Kick() // one more failed try of the head, which must not let b or c by
	for q.Snapshot().ApplyFailures < 1 {
		time.Sleep(time.Millisecond)
	}
	st.down.Store(false)
	flush(t, q)
	if got := st.stored(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("stored %v, want a b c", got)
	}
	if tried := slices.Compact(slices.Clone(st.applied)); !slices.Equal(tried, []string{"a", "b", "c"}) || len(st.applied) < 4 {
		t.Fatalf("applied %v; want a tried until the store took it, then b, then c", st.applied)
	}
	if s := q.Snapshot(); s.Pending != 0 || s.Accepted != 3 || s.Replayed != 3 {
		t.Fatalf("snapshot %+v", s)
	}
}

// Accepted writes survive the process: a queue closed (or crashed) with
// entries pending gives them back on the next Open, which also drops a
// last record cut short and goes on numbering after the old ones.
func TestPendingSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q")
	st := &store{}
	st.down.Store(true)
	q := open(t, path, st, 0)
	for _, k := range []string{"a", "b"} {
		if _, _, err := q.Enqueue(k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":3,"key":"c","da`) // a crash in the middle of a write
	f.Close()
	// The store is still down when the queue reopens: a replay that
	// started at Open cannot drain what the count below must see.
	q = open(t, path, st, 0)
	defer q.Close()
	if n := q.Pending(); n != 2 {
		t.Fatalf("reopened with %d pending, want 2", n)
	}
	st.down.Store(false)
	flush(t, q)
	if got := st.stored(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("stored %v, want a b", got)
	}
	if e, _, err := q.Enqueue("d", nil); err != nil || e.Seq != 3 {
		t.Fatalf("next entry %+v, %v; want seq 3", e, err)
	}
	flush(t, q)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("file with nothing pending: %v, %v; want it empty", fi.Size(), err)
	}
}

// An entry the store took before the process ended is not replayed by the
// next Open: its completion record is read back with it, and only the
// entries still waiting come back pending.
func TestStoredEntriesStayStoredAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q")
	st := &store{}
	bTried := make(chan struct{}, 1)
	q, err := writebehind.Open(writebehind.Settings{
		Path: path, RetryEvery: time.Hour,
		Apply: func(ctx context.Context, e writebehind.Entry) error {
			if e.Key == "b" {
				// a is stored and its completion written before b is tried.
				select {
				case bTried <- struct{}{}:
				default:
				}
				return errDown
			}
			return st.apply(ctx, e)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	q.Enqueue("a", []byte("a"))
	q.Enqueue("b", []byte("b"))
	select {
	case <-bTried:
	case <-time.After(5 * time.Second):
		q.Close()
		t.Fatalf("b was never tried: %+v", q.Snapshot())
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if got := st.stored(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("stored before the reopen %v, want a", got)
	}
	after := &store{}
	after.down.Store(true) // nothing is replayed before the count below
	q = open(t, path, after, 0)
	defer q.Close()
	if n := q.Pending(); n != 1 {
		t.Fatalf("reopened with %d pending, want 1 (b)", n)
	}
	after.down.Store(false)
	flush(t, q)
	if got := after.stored(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("stored after the reopen %v, want b only", got)
	}
}

// A link planted under the queue file's name is refused by Open, and what
// it points to is left as it was.
func TestOpenRefusesALinkedQueueFile(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("theirs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "q")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	q, err := writebehind.Open(writebehind.Settings{Path: path, Apply: (&store{}).apply})
	if err == nil {
		q.Close()
		t.Error("Open took a link as its queue file")
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "theirs\n" {
		t.Errorf("the file the link points to: %q, %v", data, err)
	}
}

// A malformed record in the middle of the file is refused with its line.
func TestCorruptFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q")
	os.WriteFile(path, []byte("{\"seq\":1,\"key\":\"a\"}\nnot json\n{\"done\":1}\n"), 0o600)
	_, err := writebehind.Open(writebehind.Settings{Path: path, Apply: (&store{}).apply})
	if err == nil || err.Error() != "writebehind: "+path+":2: not a queue record: invalid character 'o' in literal null (expecting 'u')" {
		t.Fatalf("err %v", err)
	}
}

// At MaxPending, Enqueue refuses with ErrFull, a rejection: back-pressure
// the caller turns into a 503.
func TestBoundRefuses(t *testing.T) {
	st := &store{}
	st.down.Store(true)
	q := open(t, filepath.Join(t.TempDir(), "q"), st, 2)
	defer q.Close()
	q.Enqueue("a", nil)
	q.Enqueue("b", nil)
	if _, _, err := q.Enqueue("c", nil); !errors.Is(err, writebehind.ErrFull) || breakerimpl.ReasonOf(err) != breakerimpl.ReasonRejected {
		t.Fatalf("third entry: %v, want ErrFull", err)
	}
	if s := q.Snapshot(); s.Refused != 1 || s.Pending != 2 || s.Oldest.IsZero() {
		t.Fatalf("snapshot %+v", s)
	}
}

// An entry Discard says can never be stored is dropped and reported, and
// does not hold back the ones after it.
func TestDiscard(t *testing.T) {
	errInvalid := errors.New("invalid")
	st := &store{}
	var dropped []string
	q, err := writebehind.Open(writebehind.Settings{
		Path: filepath.Join(t.TempDir(), "q"), RetryEvery: time.Hour,
		Apply: func(ctx context.Context, e writebehind.Entry) error {
			if e.Key == "bad" {
				return errInvalid
			}
			return st.apply(ctx, e)
		},
		Discard:   func(err error) bool { return errors.Is(err, errInvalid) },
		OnDiscard: func(e writebehind.Entry, _ error) { dropped = append(dropped, e.Key) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	q.Enqueue("bad", nil)
	q.Enqueue("good", nil)
	flush(t, q)
	if !slices.Equal(dropped, []string{"bad"}) || !slices.Equal(st.stored(), []string{"good"}) || q.Snapshot().Discarded != 1 {
		t.Fatalf("dropped %v, stored %v, %+v", dropped, st.stored(), q.Snapshot())
	}
}
