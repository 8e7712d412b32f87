package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
)

// Shard is the slice of a scenario's load one run sends, as k6's execution
// segments slice a test: of every phase's pacer, the run with Index i of
// Count n sends hits i-1, i-1+n, i-1+2n, … (counting from 0), each at the
// moment the whole pacer schedules it, with the request the whole run
// would send there. n shards together send the load of one run, and no
// hit twice. The zero value is the whole load.
type Shard struct {
	Index, Count int
}

// ParseShard parses "i/n", 1 <= i <= n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n || n > maxShards {
		return Shard{}, fmt.Errorf("shard %q is not i/n with 1 <= i <= n <= %d (write --shard 2/3 for the second of three)", s, maxShards)
	}
	return Shard{Index: i, Count: n}, nil
}

// maxShards bounds n: more shards than that slice a rate thinner than
// any pacer keeps.
const maxShards = 1000

// Whole reports whether s is the whole load.
func (s Shard) Whole() bool { return s.Count <= 1 }

func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// shardPacer paces one shard's hits: the shard's k-th hit is hit
// k·n + i of the whole pacer. du is the phase's duration: vegeta sends a
// hit when the one before it went out within the duration, so a whole
// run sends hit g when hit g-1 is due before du, and so does the shard
// that has g (its own previous hit may be due well before du).
type shardPacer struct {
	p    vegeta.Pacer
	i, n uint64
	du   time.Duration
}

var _ vegeta.Pacer = shardPacer{}

// Pace implements vegeta.Pacer.
func (s shardPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	g := hits*s.n + s.i
	if g > 0 && s.du > 0 {
		// When is hit g-1 due, by the pacer asked now? The whole run
		// reaches hit g only if g-1 went out before du.
		if wait, stop := s.p.Pace(elapsed, g-1); stop || wait > 0 && elapsed+wait >= s.du {
			return 0, true
		}
	}
	return s.p.Pace(elapsed, g)
}

// Rate implements vegeta.Pacer: the shard's share of the rate.
func (s shardPacer) Rate(elapsed time.Duration) float64 { return s.p.Rate(elapsed) / float64(s.n) }

func (s shardPacer) String() string { return fmt.Sprintf("shard %d/%d of %v", s.i+1, s.n, s.p) }

// pacer returns the shard's slice of p over a phase lasting du.
func (s Shard) pacer(p vegeta.Pacer, du time.Duration) vegeta.Pacer {
	if s.Whole() {
		return p
	}
	return shardPacer{p: p, i: uint64(s.Index - 1), n: uint64(s.Count), du: du}
}

// shardRequests hands a shard the requests of its hits: of every n the
// generator makes, the i-th.
type shardRequests struct {
	mu    sync.Mutex
	gen   *plan.Generator
	shard Shard
	first bool
}

func (s *shardRequests) next() plan.Request { return ofShard(s, s.gen.Next) }

// nextIteration hands a shard its iterations of a load with chains, as
// next hands it requests.
func (s *shardRequests) nextIteration() *plan.Iteration { return ofShard(s, s.gen.NextIteration) }

func ofShard[T any](s *shardRequests, next func() T) T {
	if s.shard.Whole() {
		return next()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.first {
		s.first = true
		for range s.shard.Index - 1 {
			next()
		}
	}
	q := next()
	for range s.shard.Count - 1 {
		next()
	}
	return q
}

// withoutFaults is sc with no fault in any phase: a shard that sends load
// only, while shard 1 or a --faults-only run switches the faults.
func withoutFaults(sc *plan.Scenario) *plan.Scenario {
	out := *sc
	out.Phases = make([]plan.Phase, len(sc.Phases))
	for i, p := range sc.Phases {
		p.Faults = nil
		out.Phases[i] = p
	}
	return &out
}

// idlePacer plans no hit: a --faults-only run's phases send no load.
type idlePacer struct{}

// Pace implements vegeta.Pacer: no hit, ever.
func (idlePacer) Pace(time.Duration, uint64) (time.Duration, bool) { return 0, true }

// Rate implements vegeta.Pacer.
func (idlePacer) Rate(time.Duration) float64 { return 0 }

// idle is the results of a phase that sends no load: none, after the
// phase's duration (or sooner, when ctx ends).
func idle(ctx context.Context, d time.Duration) <-chan *vegeta.Result {
	ch := make(chan *vegeta.Result)
	go func() {
		defer close(ch)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}()
	return ch
}
