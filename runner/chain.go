package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// chainAttack drives a load with request chains: vegeta's attacker cannot
// make a request depend on an earlier answer, so each arrival of the
// phase's pacer starts one iteration in a pacedAttack (open model: the
// pacer paces the starts, whatever became of the iterations before), and
// the iteration sends its steps in order, each after the answer to the
// one before and its think time. A plain template of the load is an
// iteration of one step. An iteration stops at a step that needs a
// capture an earlier step could not make (counted in stops), and when the
// phase ends (counted in cut): its unsent steps are no requests.
type chainAttack struct {
	pacedAttack
	client *http.Client
	base   string
	name   string
	next   func() *plan.Iteration
	seq    atomic.Uint64
	stops  chainStops
	cut    atomic.Int64
	// begun counts the iterations that sent their first step.
	begun   atomic.Int64
	startMu sync.Mutex
	started func(time.Time)
	// noted, when set, is told of each step's result with what its
	// iteration captured, before the result is recorded (for verify:).
	noted func(res *vegeta.Result, step plan.StepInfo, caps func() plan.Captures)
}

func newChainAttack(client *http.Client, base, name string, next func() *plan.Iteration, l plan.Load, started func(time.Time)) *chainAttack {
	return &chainAttack{pacedAttack: newPacedAttack(l), client: client, base: base, name: name, next: next, started: started}
}

// Attack runs iterations paced by p for d and returns the results of
// their steps, closed when the last has come back.
func (a *chainAttack) Attack(ctx context.Context, p vegeta.Pacer, d time.Duration) <-chan *vegeta.Result {
	results := make(chan *vegeta.Result)
	end := time.Now().Add(d)
	a.attack(p, d, results, func() { a.iterate(ctx, a.next(), end, results) })
	return results
}

// iterate runs one iteration until its last step, a step it cannot send,
// the phase's end (end) or Stop.
func (a *chainAttack) iterate(ctx context.Context, it *plan.Iteration, end time.Time, results chan<- *vegeta.Result) {
	for i := range it.Len() {
		// A step that cannot be sent stops the iteration whatever the
		// time: it is a stop, not a cut.
		if capture, why, blocked := it.Blocked(i); blocked {
			lost := make([]plan.StepInfo, 0, it.Len()-i)
			for j := i; j < it.Len(); j++ {
				lost = append(lost, it.Describe(j))
			}
			a.stops.add(lost, capture, why)
			return
		}
		if d := it.Think(i); d > 0 {
			if time.Now().Add(d).After(end) {
				a.cut.Add(1)
				return
			}
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-a.stopch:
				t.Stop()
				a.cut.Add(1)
				return
			}
		}
		if i > 0 && (!time.Now().Before(end) || a.stopped()) {
			a.cut.Add(1)
			return
		}
		res := a.send(ctx, it.Request(i))
		if i == 0 && a.started != nil {
			a.begun.Add(1)
			a.startMu.Lock()
			a.started(res.Timestamp)
			a.startMu.Unlock()
		}
		it.Take(i, int(res.Code), res.Headers, res.Body)
		if a.noted != nil {
			a.noted(res, it.Describe(i), it.Captured)
		}
		results <- res
	}
}

// stopped says whether Stop was called.
func (a *chainAttack) stopped() bool {
	select {
	case <-a.stopch:
		return true
	default:
		return false
	}
}

// send makes one request of a step as vegeta's attacker makes a hit, and
// returns its result in the same form: Code 0 and Error for no response,
// Error the status line for a status outside 2xx and 3xx, the body cut at
// 4 MiB.
func (a *chainAttack) send(ctx context.Context, q plan.Request) *vegeta.Result {
	h := make(http.Header, len(q.Headers))
	for k, v := range q.Headers {
		h.Set(k, v)
	}
	tgt := vegeta.Target{Method: q.Method, URL: withTemplate(a.base+q.Path, q), Header: h, Body: q.Body}
	res := &vegeta.Result{Attack: a.name, Seq: a.seq.Add(1) - 1, Method: tgt.Method, URL: tgt.URL, Timestamp: time.Now()}
	var err error
	defer func() {
		res.Latency = time.Since(res.Timestamp)
		if err != nil {
			res.Error = err.Error()
		}
	}()
	req, err := tgt.Request()
	if err != nil {
		return res
	}
	req = req.WithContext(ctx)
	if a.name != "" {
		req.Header.Set("X-Vegeta-Attack", a.name)
	}
	req.Header.Set("X-Vegeta-Seq", fmt.Sprint(res.Seq))
	r, err := a.client.Do(req)
	if err != nil {
		return res
	}
	defer r.Body.Close()
	if res.Body, err = io.ReadAll(io.LimitReader(r.Body, maxLoadBody)); err != nil {
		return res
	}
	if _, err = io.Copy(io.Discard, r.Body); err != nil {
		return res
	}
	res.BytesIn = uint64(len(res.Body))
	if req.ContentLength != -1 {
		res.BytesOut = uint64(req.ContentLength)
	}
	if res.Code = uint16(r.StatusCode); res.Code < 200 || res.Code >= 400 {
		res.Error = r.Status
	}
	res.Headers = r.Header
	return res
}

// maxLoadBody bounds a response body the load reads, as vegeta.MaxBody
// does for vegeta's attacker.
const maxLoadBody = 4 << 20

// chainStops counts the iterations that stopped before a step for want of
// a capture, by step and capture, with the causes.
type chainStops struct {
	mu sync.Mutex
	by map[string]*chainStop
}

type chainStop struct {
	// lost are the step the iterations stopped before and those after it.
	lost    []plan.StepInfo
	capture string
	n       int
	causes  map[string]int
}

func (s *chainStops) add(lost []plan.StepInfo, capture, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := lost[0].Template + "\x00" + capture
	c := s.by[key]
	if c == nil {
		if s.by == nil {
			s.by = map[string]*chainStop{}
		}
		c = &chainStop{lost: lost, capture: capture, causes: map[string]int{}}
		s.by[key] = c
	}
	c.n++
	c.causes[why]++
}

// events returns the stops as ChainStop events of phase at t, in the
// order of their steps' names.
func (s *chainStops) events(phase string, t time.Time) []timeline.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.by))
	for k := range s.by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []timeline.Event
	for _, k := range keys {
		c := s.by[k]
		causes := make(map[string]any, len(c.causes))
		for why, n := range c.causes {
			causes[why] = n
		}
		lost := make([]any, len(c.lost))
		for i, st := range c.lost {
			lost[i] = map[string]any{timeline.ChainTemplate: st.Template, timeline.ChainMethod: st.Method, timeline.ChainPath: st.Path, timeline.ChainTags: st.Tags}
		}
		out = append(out, timeline.Event{Time: t, Kind: timeline.ChainStop, Phase: phase, Message: c.sentence(), Data: map[string]any{
			timeline.ChainTemplate: c.lost[0].Template, timeline.ChainCapture: c.capture, timeline.ChainCount: c.n,
			timeline.ChainCauses: causes, timeline.ChainLost: lost,
		}})
	}
	return out
}

// sentence says what a stop counts: "12 iterations of chain
// link-lifecycle stopped before read: capture code missing (create got
// 500 ×9, create got no response ×3)".
func (c *chainStop) sentence() string {
	chain, step, _ := strings.Cut(c.lost[0].Template, "/")
	return fmt.Sprintf("%d iterations of chain %s stopped before %s: capture %s missing (%s)", c.n, chain, step, c.capture, causeList(c.causes))
}

// causeList renders counts by cause, the largest first: "create got 500 ×9,
// create got no response ×3".
func causeList(m map[string]int) string {
	whys := make([]string, 0, len(m))
	for why := range m {
		whys = append(whys, why)
	}
	sort.Slice(whys, func(i, j int) bool {
		if m[whys[i]] != m[whys[j]] {
			return m[whys[i]] > m[whys[j]]
		}
		return whys[i] < whys[j]
	})
	parts := make([]string, len(whys))
	for i, why := range whys {
		parts[i] = fmt.Sprintf("%s ×%d", why, m[why])
	}
	return strings.Join(parts, ", ")
}

// phaseEnd adds to a PhaseEnd event's data what the chains did: the
// iterations started in place of the requests sent (the pacer paces
// iterations), and those the phase's end cut; and records the stops.
func (a *chainAttack) phaseEnd(r *run, phase string, t time.Time, data map[string]any) {
	data[timeline.SentRequests] = a.begun.Load()
	data[timeline.ChainCut] = a.cut.Load()
	for _, e := range a.stops.events(phase, t) {
		r.event(e)
	}
}

// figures returns what the iterations did, for the run's summary.
func (a *chainAttack) figures() *ChainFigures {
	f := &ChainFigures{Iterations: a.begun.Load(), Cut: a.cut.Load()}
	for _, e := range a.stops.events("", time.Time{}) {
		n, _ := timeline.Number(e.Data[timeline.ChainCount])
		f.Stopped += int64(n)
		f.Stops = append(f.Stops, e.Message)
	}
	return f
}
