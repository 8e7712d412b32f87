// Package fallbackfuzz fuzzes the fallback strategies (Static, Cache, Func
// and Chain, nested too) behind a breakerimpl.Pipeline against a reference
// model. It holds the one fuzz body that Go's native fuzzing (FuzzChain)
// and go-fuzz (Fuzz, with the gofuzz build tag) share.
package fallbackfuzz

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/internal/fuzzbytes"
)

const keys = 8 // keys are 0..7, more than the smaller caches hold

var (
	errPrimary = errors.New("fallbackfuzz: primary failed")
	errFunc    = errors.New("fallbackfuzz: func failed")
)

// stored is what the model knows of one key in one cache.
type stored struct {
	value int
	at    time.Duration // clock reading when remembered
}

// member is one strategy of the chain under test, with its model.
type member struct {
	name string
	kind byte // kindStatic, kindCache, kindFunc, kindChain
	// cache
	maxStale   time.Duration
	maxEntries int
	known      map[int]stored
	recency    []int // the keys of known, least recently used first
	// func: fails when failing is set for the call
	failing bool
	// chain: its members, in order
	sub []*member
}

const (
	kindStatic = iota
	kindCache
	kindFunc
	kindChain
	kinds
)

// staticValue is what the static fallback named name serves.
func staticValue(name string) int { return -1000 - len(name) }

// build decodes a member (nested chains at most depth deep) and the real
// strategy it models.
func build(in *fuzzbytes.Input, c *clock.Fake, name string, depth int) (*member, breakerimpl.Fallback[int, int]) {
	m := &member{name: name, kind: in.Next() % kinds}
	if m.kind == kindChain && depth == 0 {
		m.kind = kindStatic
	}
	switch m.kind {
	case kindStatic:
		return m, fallback.Static[int, int]{Name: name, Value: staticValue(name)}
	case kindCache:
		m.maxStale = []time.Duration{0, time.Second, 5 * time.Second}[in.Next()%3]
		m.maxEntries = 1 + int(in.Next()%keys)
		m.known = map[int]stored{}
		return m, fallback.NewCache[int, int](fallback.CacheSettings{Name: name, MaxEntries: m.maxEntries, MaxStaleness: m.maxStale, Clock: c})
	case kindFunc:
		return m, fallback.Func[int, int]{Name: name, Fn: func(_ context.Context, key int, err error) (int, error) {
			if !errors.Is(err, errPrimary) {
				panic(fmt.Sprintf("%s was given %v, not the primary's error", name, err))
			}
			if m.failing {
				return 0, errFunc
			}
			return -key, nil
		}}
	}
	n := int(in.Next() % 4) // an empty chain fails with an error of its own
	var chain fallback.Chain[int, int]
	for i := range n {
		sm, f := build(in, c, name+"."+strconv.Itoa(i), depth-1)
		m.sub = append(m.sub, sm)
		chain = append(chain, f)
	}
	return m, chain
}

// remember applies Remember to the model: a cache keeps the value and
// makes the key its most recently used, dropping its least recently used
// key when it holds more than it has room for.
func (m *member) remember(key, v int, now time.Duration) {
	switch m.kind {
	case kindCache:
		m.known[key] = stored{v, now}
		m.use(key)
		if len(m.recency) > m.maxEntries {
			delete(m.known, m.recency[0])
			m.recency = m.recency[1:]
		}
	case kindChain:
		for _, s := range m.sub {
			s.remember(key, v, now)
		}
	}
}

// use makes key the cache's most recently used, if it holds it: Remember
// does, and so does Recover, whether or not the copy is fresh enough to
// serve.
func (m *member) use(key int) {
	if i := slices.Index(m.recency, key); i >= 0 {
		m.recency = slices.Delete(m.recency, i, i+1)
	}
	if _, ok := m.known[key]; ok {
		m.recency = append(m.recency, key)
	}
}

// setFailing sets, from in, which funcs fail on the next call.
func (m *member) setFailing(in *fuzzbytes.Input) {
	switch m.kind {
	case kindFunc:
		m.failing = in.Next()%2 == 1
	case kindChain:
		for _, s := range m.sub {
			s.setFailing(in)
		}
	}
}

// check checks a Recover outcome of m for key at now: res/err as the real
// strategy gave them. It returns "" when the outcome is one the model
// allows, else what is wrong. The caches asked take note of the use.
func (m *member) check(key int, now time.Duration, res breakerimpl.Result[int], err error) string {
	switch m.kind {
	case kindStatic:
		if err != nil || res.Source != m.name || res.Value != staticValue(m.name) || res.Age != 0 {
			return fmt.Sprintf("static %s: got %+v, %v", m.name, res, err)
		}
		return ""
	case kindFunc:
		if m.failing {
			if !errors.Is(err, errFunc) {
				return fmt.Sprintf("func %s should fail: got %+v, %v", m.name, res, err)
			}
			return ""
		}
		if err != nil || res.Source != m.name || res.Value != -key || res.Age != 0 {
			return fmt.Sprintf("func %s: got %+v, %v", m.name, res, err)
		}
		return ""
	case kindCache:
		s, ok := m.known[key]
		m.use(key)
		switch {
		case !ok:
			if !errors.Is(err, fallback.ErrNotCached) {
				return fmt.Sprintf("cache %s does not hold key %d: got %+v, %v", m.name, key, res, err)
			}
		case m.maxStale > 0 && now-s.at > m.maxStale:
			if !errors.Is(err, fallback.ErrTooStale) {
				return fmt.Sprintf("cache %s key %d is %v old, over %v: got %+v, %v", m.name, key, now-s.at, m.maxStale, res, err)
			}
		default:
			if err != nil || res.Source != m.name || res.Value != s.value || res.Age != now-s.at {
				return fmt.Sprintf("cache %s key %d: want %d aged %v, got %+v, %v", m.name, key, s.value, now-s.at, res, err)
			}
		}
		return ""
	}
	// A chain serves what its first member to succeed served, after every
	// member before it failed; when all fail, it fails with all their
	// errors.
	if len(m.sub) == 0 {
		if err == nil {
			return fmt.Sprintf("empty chain %s served %+v", m.name, res)
		}
		return ""
	}
	for _, s := range m.sub {
		if err == nil && servedBy(res.Source, s) {
			return s.check(key, now, res, nil)
		}
		// s failed (or the chain went past it): its failure must be one
		// the model allows, and its error must be in the chain's.
		if msg := s.mustFail(key, now, err); msg != "" {
			return msg
		}
	}
	if err == nil {
		return fmt.Sprintf("chain %s served %+v from no member", m.name, res)
	}
	return ""
}

// servedBy says whether source names s or one of its members.
func servedBy(source string, s *member) bool {
	if source == s.name {
		return true
	}
	for _, sub := range s.sub {
		if servedBy(source, sub) {
			return true
		}
	}
	return false
}

// mustFail checks that s may fail for key at now, and, when the chain
// failed with err, that err holds s's error.
func (s *member) mustFail(key int, now time.Duration, err error) string {
	var want error
	switch s.kind {
	case kindStatic:
		return fmt.Sprintf("static %s was passed over", s.name)
	case kindFunc:
		if !s.failing {
			return fmt.Sprintf("func %s would serve but was passed over", s.name)
		}
		want = errFunc
	case kindCache:
		st, ok := s.known[key]
		s.use(key)
		switch {
		case !ok:
			want = fallback.ErrNotCached
		case s.maxStale > 0 && now-st.at > s.maxStale:
			want = fallback.ErrTooStale
		default:
			return fmt.Sprintf("cache %s holds key %d but was passed over", s.name, key)
		}
	case kindChain:
		for _, sub := range s.sub {
			if msg := sub.mustFail(key, now, err); msg != "" {
				return msg
			}
		}
		return ""
	}
	if err != nil && want != nil && !errors.Is(err, want) {
		return fmt.Sprintf("%s failed, but the chain's error %q lacks %q", s.name, err, want)
	}
	return ""
}

// fuzzChain decodes a fallback (a strategy or a chain of them, nested up
// to two levels) put in a Pipeline, then calls: successes (the value goes
// to every cache), clock advances, and failures of the primary with a
// choice of which funcs fail. After each failure it checks the result
// against the model: the source and value of the first strategy able to
// serve, a cached copy's exact age, no copy over its maximum staleness,
// the latest value remembered for the key and never another key's, a
// cache dropping exactly its least recently used key when full, and
// when nothing can serve, errors.Join of the primary's error and every
// strategy's, in order. It panics on a violation and returns 1 when the
// input made at least one call.
func fuzzChain(data []byte) int {
	in := fuzzbytes.Input(data)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	model, fb := build(&in, c, "fb", 2)
	p := breakerimpl.Pipeline[int, int]{Fallback: fb}
	ctx := context.Background()
	now := func() time.Duration { return time.Duration(c.Nanotime()) }
	calls, value := 0, 0
	for len(in) > 0 && calls < 200 {
		op := in.Next()
		key := int(op>>2) % keys
		switch op % 4 {
		case 0, 1: // the primary serves a new value
			value++
			v := value
			res, err := p.Execute(ctx, key, func(context.Context) (int, error) { return v, nil })
			if err != nil || res.Value != v || res.Source != breakerimpl.SourcePrimary {
				panic(fmt.Sprintf("success: got %+v, %v", res, err))
			}
			model.remember(key, v, now())
		case 2:
			c.Advance([]time.Duration{0, 400 * time.Millisecond, time.Second, 3 * time.Second}[in.Next()%4])
		case 3: // the primary fails
			model.setFailing(&in)
			res, err := p.Execute(ctx, key, func(context.Context) (int, error) { return 0, errPrimary })
			if err != nil {
				if !errors.Is(err, errPrimary) {
					panic(fmt.Sprintf("a failed fallback hides the primary's error: %v", err))
				}
				if res.Reason != breakerimpl.ReasonError {
					panic(fmt.Sprintf("failure: reason %v, want error", res.Reason))
				}
			} else if res.Reason != breakerimpl.ReasonError {
				panic(fmt.Sprintf("fallback served with reason %v, want error", res.Reason))
			}
			if msg := model.check(key, now(), res, err); msg != "" {
				panic(msg)
			}
		}
		calls++
	}
	if calls == 0 {
		return 0
	}
	return 1
}
