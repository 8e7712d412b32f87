package timeline

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"time"
)

// Merged is the union of shard runs (chaoskit run --shard i/n, and a
// --faults-only run) judged as one run: one phase span per phase, from the
// earliest shard's start to the latest one's end, with the planned and
// sent counts added up; every other event of every shard; and the
// requests of all, merged in send order. A request's Seq is made unique
// across shards: (Seq-1)·k + j for the j-th of k runs, and so is the
// write a read-back names.
type Merged struct {
	head   Timeline
	shards []*Stream
}

// Merge opens the runs recorded in dirs as one. They must be runs of one
// scenario.
func Merge(dirs []string) (*Merged, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no run directories to merge")
	}
	m := &Merged{}
	for _, d := range dirs {
		s, err := OpenDir(d)
		if err != nil {
			return nil, err
		}
		if len(m.shards) > 0 && s.head.Meta.Scenario != m.shards[0].head.Meta.Scenario {
			return nil, fmt.Errorf("%s is a run of scenario %q and %s of %q: merge the shards of one run", d, s.head.Meta.Scenario, dirs[0], m.shards[0].head.Meta.Scenario)
		}
		m.shards = append(m.shards, s)
	}
	// The run that switched the faults describes the run best.
	sort.SliceStable(m.shards, func(i, j int) bool { return m.shards[i].Switched() && !m.shards[j].Switched() })
	m.head = Timeline{Meta: m.shards[0].head.Meta, Complete: true}
	m.head.Meta.Shard = ""
	k := uint64(len(m.shards))
	type span struct {
		start, end        *Event
		planned, sent     float64
		workers           float64
		plannedBy, sentBy float64
		behindAt          float64
	}
	spans := map[string]*span{}
	var order []string
	var runEnd *Event
	for j, s := range m.shards {
		m.head.Complete = m.head.Complete && s.head.Complete
		for _, e := range s.head.Events {
			switch e.Kind {
			case PhaseStart:
				sp := spans[e.Phase]
				if sp == nil {
					sp = &span{}
					spans[e.Phase] = sp
					order = append(order, e.Phase)
				}
				if sp.start == nil || e.Time.Before(sp.start.Time) {
					e := e
					sp.start = &e
				}
				continue
			case PhaseEnd:
				sp := spans[e.Phase]
				if sp == nil {
					continue
				}
				if sp.end == nil || e.Time.After(sp.end.Time) {
					e := e
					sp.end = &e
				}
				for key, into := range map[string]*float64{PlannedRequests: &sp.planned, SentRequests: &sp.sent, MaxWorkers: &sp.workers,
					PlannedBy: &sp.plannedBy, SentBy: &sp.sentBy} {
					if v, ok := Number(e.Data[key]); ok {
						*into += v
					}
				}
				if v, ok := Number(e.Data[BehindAt]); ok {
					sp.behindAt = max(sp.behindAt, v)
				}
				continue
			case RunEnd:
				if runEnd == nil || (e.Message != "" && e.Message != "completed" && (runEnd.Message == "" || runEnd.Message == "completed")) {
					e := e
					runEnd = &e
				}
				continue
			case ReadBack:
				if e.Read != nil {
					rd := *e.Read
					rd.Write = (rd.Write-1)*k + uint64(j) + 1
					e.Read = &rd
				}
			case Verify:
				if e.Verified != nil {
					vr := *e.Verified
					vr.Request = (vr.Request-1)*k + uint64(j) + 1
					e.Verified = &vr
				}
			}
			m.head.Events = append(m.head.Events, e)
		}
	}
	for _, name := range order {
		sp := spans[name]
		m.head.Events = append(m.head.Events, *sp.start)
		if sp.end != nil {
			end := *sp.end
			end.Data = map[string]any{PlannedRequests: sp.planned, SentRequests: sp.sent, MaxWorkers: sp.workers,
				BehindAt: sp.behindAt, PlannedBy: sp.plannedBy, SentBy: sp.sentBy}
			m.head.Events = append(m.head.Events, end)
		}
	}
	if runEnd != nil {
		m.head.Events = append(m.head.Events, *runEnd)
	}
	slices.SortStableFunc(m.head.Events, func(a, b Event) int { return a.Time.Compare(b.Time) })
	for _, s := range m.shards {
		if s.head.lastEnd != nil {
			if m.head.lastEnd == nil {
				m.head.lastEnd = map[string]time.Time{}
			}
			for p, t := range s.head.lastEnd {
				if t.After(m.head.lastEnd[p]) {
					m.head.lastEnd[p] = t
				}
			}
		}
	}
	return m, nil
}

// Streams are the merged runs, the one that switched the faults first.
func (m *Merged) Streams() []*Stream { return m.shards }

// Switched reports whether the run switched faults.
func (s *Stream) Switched() bool {
	for _, e := range s.head.Events {
		if e.Kind == FaultOn {
			return true
		}
	}
	return false
}

// Number reads a number from event data, as recorded (an integer) or read
// back from disk (a float64).
func Number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// Head returns the merged meta and events.
func (m *Merged) Head() *Timeline { return &m.head }

// Shards names the merged runs, the one that switched the faults first.
func (m *Merged) Shards() []string {
	out := make([]string, len(m.shards))
	for i, s := range m.shards {
		out[i] = s.dir
		if sh := s.head.Meta.Shard; sh != "" {
			out[i] += " (shard " + sh + ")"
		} else if s.head.Meta.FaultsOnly {
			out[i] += " (faults only)"
		}
	}
	return out
}

// Cut reports whether a shard's request stream was cut short (after a
// full pass).
func (m *Merged) Cut() bool {
	for _, s := range m.shards {
		if s.Cut {
			return true
		}
	}
	return false
}

// errStop ends a shard's pass early.
var errStop = errors.New("stop")

// EachRequest merges the shards' requests by send time: each shard's
// record is in completion order, nearly send order, and the earliest head
// goes first.
func (m *Merged) EachRequest(fn func(*Request) error) error {
	k := uint64(len(m.shards))
	type head struct {
		next func() (*Request, bool)
		stop func()
		r    *Request
		j    uint64
		err  *error
	}
	var heads []*head
	defer func() {
		for _, h := range heads {
			h.stop()
		}
	}()
	for j, s := range m.shards {
		var ferr error
		seq := func(yield func(*Request) bool) {
			err := s.EachRequest(func(r *Request) error {
				if !yield(r) {
					return errStop
				}
				return nil
			})
			if err != nil && !errors.Is(err, errStop) {
				ferr = err
			}
		}
		next, stop := iter.Pull(iter.Seq[*Request](seq))
		h := &head{next: next, stop: stop, j: uint64(j), err: &ferr}
		if h.r, _ = next(); h.r != nil {
			heads = append(heads, h)
		} else if ferr != nil {
			return ferr
		} else {
			stop()
		}
	}
	for len(heads) > 0 {
		best := 0
		for i, h := range heads[1:] {
			if h.r.Time.Before(heads[best].r.Time) {
				best = i + 1
			}
		}
		h := heads[best]
		q := *h.r
		q.Seq = (q.Seq-1)*k + h.j + 1
		if err := fn(&q); err != nil {
			return err
		}
		var ok bool
		if h.r, ok = h.next(); !ok {
			h.stop()
			if *h.err != nil {
				return *h.err
			}
			heads = slices.Delete(heads, best, best+1)
		}
	}
	return nil
}
