// Package writebehind is a write fallback: while a store refuses writes,
// they are accepted into a durable local queue (an append-only file on
// the local disk) and written to the store later, in the order they were
// accepted, by a replayer that tries the oldest again until the store
// takes it.
//
//	q, err := writebehind.Open(writebehind.Settings{
//		Path:  "/var/lib/shop/orders.queue",
//		Apply: func(ctx context.Context, e writebehind.Entry) error { return db.Insert(ctx, e.Key, e.Data) },
//	})
//	...
//	if err := db.Insert(ctx, key, data); err != nil {
//		if _, err := q.Enqueue(key, data); err != nil { // writebehind.ErrFull: refuse, with Retry-After
//			...
//		}
//		// accepted: 202
//	}
//
// This is seed 002's "keep writes locally for later while the store is
// down". What it promises:
//
//   - Durable acceptance. Enqueue returns only once the entry is on disk
//     (written and fsynced), so an accepted write survives a crash of the
//     process; Open reads the pending entries back and replays them. A
//     record cut short by a crash (the last line of the file, incomplete)
//     was never accepted and is dropped.
//   - Order. Entries are replayed one at a time, oldest first; a failed
//     entry is tried again (every Settings.RetryEvery, or at once on Kick)
//     before any younger one. A caller that writes directly to the store
//     while entries are pending would overtake them: write through the
//     queue while Pending() > 0.
//   - Idempotence. Each entry has a key; Enqueue of a key still pending
//     returns the pending entry instead of adding one, and Apply must be
//     idempotent by key, because an entry the store took just before a
//     crash (before its completion reached the disk) is applied again
//     after Open.
//   - A bound and back-pressure. At Settings.MaxPending pending entries,
//     Enqueue refuses with ErrFull (a breakerimpl.ErrRejected), so the
//     caller can refuse the write (503 and Retry-After) instead of
//     accepting more than it can keep.
//
// Entries Apply refuses for good (Settings.Discard) are dropped, counted
// and reported to OnDiscard: an accepted write that can never be stored is
// a loss the caller must hear of.
//
// The file holds one JSON object a line: {"seq":…,"key":…,"data":…,"at":…}
// for an accepted entry, {"done":seq} once it is stored. It is emptied each
// time nothing is pending.
package writebehind

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// ErrFull is the error of an Enqueue refused because MaxPending entries
// are pending. It matches breakerimpl.ErrRejected with errors.Is.
var ErrFull error = fullError{}

type fullError struct{}

func (fullError) Error() string { return "writebehind: queue full, write refused" }
func (fullError) Unwrap() error { return breakerimpl.ErrRejected }

// ErrClosed is the error of an Enqueue after Close.
var ErrClosed = errors.New("writebehind: queue closed")

// Defaults of zero Settings fields.
const (
	DefaultMaxPending = 10000
	DefaultRetryEvery = 100 * time.Millisecond
)

// Settings configures a Queue. Path and Apply are required.
type Settings struct {
	// Name names the queue in snapshots.
	Name string
	// Path is the queue's file; it is made if missing. Only one Queue may
	// use a file at a time.
	Path string
	// Apply writes one entry to the store. It must be idempotent by
	// Entry.Key (see the package doc). It is called from the replayer's
	// goroutine, one entry at a time.
	Apply func(ctx context.Context, e Entry) error
	// MaxPending bounds the pending entries; past it Enqueue returns
	// ErrFull. Zero or less means DefaultMaxPending.
	MaxPending int
	// RetryEvery is how long the replayer waits after a failed Apply
	// before it tries the same entry again (Kick cuts the wait short).
	// Zero or less means DefaultRetryEvery.
	RetryEvery time.Duration
	// Discard says which errors of Apply mean the entry can never be
	// stored (invalid data, say): it is then dropped rather than tried
	// again for ever, which would hold back every younger entry. Nil means
	// none: every entry is tried until the store takes it.
	Discard func(err error) bool
	// OnDiscard is told each entry dropped by Discard, with Apply's error.
	OnDiscard func(e Entry, err error)
	// Clock is the time source. Nil means clock.Default().
	Clock clock.Clock
}

// Entry is one accepted write.
type Entry struct {
	// Seq numbers the entries of a file in the order they were accepted,
	// from 1.
	Seq uint64 `json:"seq"`
	// Key identifies the write for idempotence.
	Key string `json:"key"`
	// Data is the write, as the caller gave it.
	Data []byte `json:"data"`
	// At is when it was accepted.
	At time.Time `json:"at"`
}

// Snapshot is a Queue's state, for metrics and a state endpoint.
type Snapshot struct {
	Name string `json:"name"`
	// Pending is the entries accepted and not yet stored.
	Pending int `json:"pending"`
	// MaxPending is the bound.
	MaxPending int `json:"max_pending"`
	// Accepted, Replayed, Discarded, Refused count since Open: entries
	// accepted, entries the store took, entries dropped by Discard, and
	// Enqueues refused with ErrFull.
	Accepted  uint64 `json:"accepted"`
	Replayed  uint64 `json:"replayed"`
	Discarded uint64 `json:"discarded"`
	Refused   uint64 `json:"refused"`
	// ApplyFailures counts the failed Apply calls.
	ApplyFailures uint64 `json:"apply_failures"`
	// Oldest is when the oldest pending entry was accepted (zero when none).
	Oldest time.Time `json:"oldest,omitzero"`
}

// Queue is a durable write-behind queue. Make one with Open; it is safe
// for concurrent use.
type Queue struct {
	cfg  Settings
	kick chan struct{}
	stop chan struct{}
	done chan struct{} // closed when the replayer has returned

	mu       sync.Mutex
	file     *os.File
	pending  []Entry // oldest first
	keys     map[string]uint64
	nextSeq  uint64
	closed   bool
	idle     *sync.Cond // signalled when pending becomes empty
	counters Snapshot
}

// Open opens (or makes) the queue's file, reads back the entries still
// pending, and starts replaying them. A malformed line other than a last
// one cut short is an error naming the file and line.
func Open(s Settings) (*Queue, error) {
	if s.Path == "" || s.Apply == nil {
		return nil, errors.New("writebehind: Settings.Path and Settings.Apply are required")
	}
	if s.MaxPending <= 0 {
		s.MaxPending = DefaultMaxPending
	}
	if s.RetryEvery <= 0 {
		s.RetryEvery = DefaultRetryEvery
	}
	if s.Clock == nil {
		s.Clock = clock.Default()
	}
	q := &Queue{cfg: s, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), keys: map[string]uint64{}, nextSeq: 1}
	q.idle = sync.NewCond(&q.mu)
	q.counters.Name, q.counters.MaxPending = s.Name, s.MaxPending
	f, err := os.OpenFile(s.Path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("writebehind: %w", err)
	}
	q.file = f
	if err := q.load(); err != nil {
		f.Close()
		return nil, err
	}
	go q.replay()
	return q, nil
}

// record is one line of the file: an entry, or the completion of one.
type record struct {
	Entry
	Done uint64 `json:"done,omitempty"`
}

// load reads the file back: entries without their completion are pending.
// It cuts off a last line that a crash left incomplete.
func (q *Queue) load() error {
	if _, err := q.file.Seek(0, 0); err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	r := bufio.NewReader(q.file)
	var good int64 // bytes of whole lines read
	byseq := map[uint64]Entry{}
	var order []uint64
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil { // io.EOF: line, if any, has no newline: cut short
			break
		}
		var rec record
		if jerr := json.Unmarshal(line, &rec); jerr != nil {
			if _, perr := r.Peek(1); perr != nil { // the last line: written in part before a crash
				break
			}
			return fmt.Errorf("writebehind: %s:%d: not a queue record: %v", q.cfg.Path, n, jerr)
		}
		good += int64(len(line))
		switch {
		case rec.Done != 0:
			delete(byseq, rec.Done)
		case rec.Seq != 0:
			byseq[rec.Seq] = rec.Entry
			order = append(order, rec.Seq)
		}
		q.nextSeq = max(q.nextSeq, rec.Seq+1, rec.Done+1)
	}
	for _, seq := range order {
		if e, ok := byseq[seq]; ok {
			q.pending = append(q.pending, e)
			q.keys[e.Key] = seq
		}
	}
	if err := q.file.Truncate(good); err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	if len(q.pending) == 0 {
		return q.empty()
	}
	_, err := q.file.Seek(good, 0)
	return err
}

// empty truncates the file, with nothing pending; q.mu is held (or q is
// not shared yet).
func (q *Queue) empty() error {
	if err := q.file.Truncate(0); err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	if _, err := q.file.Seek(0, 0); err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	return q.file.Sync()
}

// append writes rec as one line and syncs it to disk; q.mu is held.
func (q *Queue) append(rec record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	if _, err := q.file.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	if err := q.file.Sync(); err != nil {
		return fmt.Errorf("writebehind: %w", err)
	}
	return nil
}

// Enqueue accepts a write: once it returns with a nil error the entry is
// on disk and will be applied to the store. A key still pending gives back
// its pending entry (accepted is false) and adds nothing. At MaxPending
// pending entries it returns ErrFull.
func (q *Queue) Enqueue(key string, data []byte) (e Entry, accepted bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Entry{}, false, ErrClosed
	}
	if seq, ok := q.keys[key]; ok {
		for _, p := range q.pending {
			if p.Seq == seq {
				return p, false, nil
			}
		}
	}
	if len(q.pending) >= q.cfg.MaxPending {
		q.counters.Refused++
		return Entry{}, false, ErrFull
	}
	e = Entry{Seq: q.nextSeq, Key: key, Data: append([]byte(nil), data...), At: q.cfg.Clock.Now()}
	if err := q.append(record{Entry: e}); err != nil {
		return Entry{}, false, err
	}
	q.nextSeq++
	q.pending = append(q.pending, e)
	q.keys[key] = e.Seq
	q.counters.Accepted++
	q.Kick()
	return e, true, nil
}

// Pending returns how many entries wait for the store.
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Lookup returns the pending entry of key, if there is one.
func (q *Queue) Lookup(key string) (Entry, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	seq, ok := q.keys[key]
	if !ok {
		return Entry{}, false
	}
	for _, p := range q.pending {
		if p.Seq == seq {
			return p, true
		}
	}
	return Entry{}, false
}

// Snapshot returns the queue's counts now.
func (q *Queue) Snapshot() Snapshot {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.counters
	s.Pending = len(q.pending)
	if len(q.pending) > 0 {
		s.Oldest = q.pending[0].At
	}
	return s
}

// Kick makes the replayer try the oldest entry now rather than at the end
// of its wait: call it when the store is known to be back (a breaker
// closed, say).
func (q *Queue) Kick() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Flush waits until nothing is pending, or ctx ends.
func (q *Queue) Flush(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.idle.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) > 0 && !q.closed {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		q.idle.Wait()
	}
	if len(q.pending) > 0 {
		return ErrClosed
	}
	return nil
}

// Close stops the replayer (an Apply in progress is cancelled through its
// context) and closes the file. The entries still pending stay in it for
// the next Open.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	q.idle.Broadcast()
	q.mu.Unlock()
	close(q.stop)
	<-q.done
	return q.file.Close()
}

// replay applies the pending entries, oldest first, until Close.
func (q *Queue) replay() {
	defer close(q.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-q.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		q.mu.Lock()
		var head Entry
		has := len(q.pending) > 0
		if has {
			head = q.pending[0]
		}
		q.mu.Unlock()
		if !has {
			select {
			case <-q.stop:
				return
			case <-q.kick:
				continue
			}
		}
		err := q.cfg.Apply(ctx, head)
		if ctx.Err() != nil {
			return
		}
		if err != nil && (q.cfg.Discard == nil || !q.cfg.Discard(err)) {
			q.mu.Lock()
			q.counters.ApplyFailures++
			q.mu.Unlock()
			t := q.cfg.Clock.NewTimer(q.cfg.RetryEvery)
			select {
			case <-q.stop:
				t.Stop()
				return
			case <-q.kick:
				t.Stop()
			case <-t.C():
			}
			continue
		}
		if err != nil && q.cfg.OnDiscard != nil {
			q.cfg.OnDiscard(head, err)
		}
		if werr := q.complete(head, err != nil); werr != nil {
			// The disk refused the completion: the entry stays pending and
			// is applied again (idempotently) after a wait.
			t := q.cfg.Clock.NewTimer(q.cfg.RetryEvery)
			select {
			case <-q.stop:
				t.Stop()
				return
			case <-t.C():
			}
		}
	}
}

// complete records that head is stored (or discarded) and drops it.
func (q *Queue) complete(head Entry, discarded bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.append(record{Done: head.Seq}); err != nil {
		return err
	}
	q.pending = q.pending[1:]
	if q.keys[head.Key] == head.Seq {
		delete(q.keys, head.Key)
	}
	if discarded {
		q.counters.Discarded++
	} else {
		q.counters.Replayed++
	}
	if len(q.pending) == 0 {
		q.pending = nil
		q.idle.Broadcast()
		return q.empty()
	}
	return nil
}
