package contract

import (
	"github.com/chaoskit/chaoskit/timeline"
)

// check is one compiled expectation. start readies it for one window; the
// accumulator it returns then sees every request of the run once, in the
// order recorded, and gives the check's result at the end. Checks judged
// on events alone ignore the requests.
type check interface {
	start(w *window) acc
}

// acc accumulates what one check needs of the requests, in memory
// independent of the run's length. in says whether r is in the window; k
// gives its class by the window's classification. r is valid only during
// the call.
type acc interface {
	add(r *timeline.Request, in bool, k *classed)
	result() CheckResult
}

// eventCheck is an accumulator that needs no request.
type eventCheck func() CheckResult

func (eventCheck) add(*timeline.Request, bool, *classed) {}
func (f eventCheck) result() CheckResult                 { return f() }

// judged is one contract being judged: its window and its checks'
// accumulators, or the reason it cannot be judged.
type judged struct {
	c    *Contract
	w    *window
	err  error
	accs []acc
	// flight measures the window's phase in flight when its load fell
	// short (see shortfall).
	flight *inFlight
	// k is the request in hand's class, reset for each request.
	k classed
	// unfiredJudged is JudgeOptions.UnfiredJudged.
	unfiredJudged bool
}

// JudgeOptions are the ways one judge can be asked to judge a run. The
// zero value judges as chaoskit run, report and merge do.
type JudgeOptions struct {
	// UnfiredJudged judges a contract whose window holds a fault that
	// never fired on what its requests showed, instead of calling it
	// inconclusive. Fault-schedule campaigns (fuzz, explore) judge so: a
	// random schedule often switches a fault on a path no request took (a
	// cache fault while the database is healthy), and the invariant still
	// holds or not on what the requests showed; coverage counts the fault
	// as scheduled but not fired. A run of a scenario written by hand
	// keeps the default: a fault that never fired there is a fault that
	// was not tested.
	UnfiredJudged bool
	// Each, when set, is told every request of a measured run (one with a
	// classification) and its class, in the judge's one pass: the
	// reports' chart series are built so (reports.SeriesBuilder).
	Each func(r *timeline.Request, c Class)
}

// Judge judges contracts over a recorded run and, when cls is not nil,
// measures the run for the reports (see Measure), with the default
// options (see JudgeWith).
func Judge(src timeline.Source, contracts []*Contract, cls *Classification) ([]Verdict, *Measurement, error) {
	return JudgeWith(src, contracts, cls, JudgeOptions{})
}

// JudgeWith judges contracts over a recorded run and, when cls is not
// nil, measures the run for the reports (see Measure), in one pass over
// its requests (two when a predicate reads baseline bodies: they are
// gathered first). Memory stays independent of the run's length: every
// check keeps counts, a latency sketch and at most its first violations.
// The error is one reading the requests (a corrupt request stream).
func JudgeWith(src timeline.Source, contracts []*Contract, cls *Classification, opts JudgeOptions) ([]Verdict, *Measurement, error) {
	head := src.Head()
	routes := newRouteCache()
	var base *baselines
	for _, c := range contracts {
		if c.readsBaseline() {
			var err error
			if base, err = gatherBaselines(src); err != nil {
				return nil, nil, err
			}
			break
		}
	}
	js := make([]*judged, len(contracts))
	for i, c := range contracts {
		j := &judged{c: c}
		js[i] = j
		j.unfiredJudged = opts.UnfiredJudged
		j.w, j.err = newWindow(head, &c.Spec)
		if j.err != nil {
			continue
		}
		j.w.baselines, j.w.routes = base, routes
		for _, ch := range c.checks {
			j.accs = append(j.accs, ch.start(j.w))
		}
		if phase, short := j.w.shortPhase(); short {
			j.flight = newInFlight(head, phase)
		}
	}
	var m *measure
	if cls != nil {
		m = newMeasure(head, *cls, routes)
		m.each = opts.Each
	}
	err := src.EachRequest(func(r *timeline.Request) error {
		for _, j := range js {
			if j.w == nil {
				continue
			}
			in := j.w.contains(r)
			if in {
				j.w.n++
			}
			j.k = classed{r: r, cls: &j.w.spec.Classify}
			for _, a := range j.accs {
				a.add(r, in, &j.k)
			}
			if j.flight != nil {
				j.flight.add(r)
			}
		}
		if m != nil {
			m.add(r)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	out := make([]Verdict, len(js))
	for i, j := range js {
		out[i] = j.verdict()
	}
	var meas *Measurement
	if m != nil {
		meas = m.result()
	}
	return out, meas, nil
}

// readsBaseline reports whether a predicate of c reads baseline bodies.
func (c *Contract) readsBaseline() bool {
	for _, ch := range c.checks {
		if q, ok := ch.(*quantifiedCheck); ok && q.readsBaseline {
			return true
		}
	}
	return false
}

// maxBaselineTargets bounds the targets a phase keeps a baseline body for,
// so that a run whose every request has its own URL keeps bounded memory;
// a target past it has no baseline.
const maxBaselineTargets = 1 << 16

// baselines are, per phase and target, the body of the last 2xx response.
type baselines struct {
	bodies map[string]map[string]string
}

// gatherBaselines reads the baseline bodies of every phase in a pass of
// their own: a predicate may read a phase's baseline before that phase has
// streamed past (a window earlier than, or in, the phase it names).
func gatherBaselines(src timeline.Source) (*baselines, error) {
	b := &baselines{bodies: map[string]map[string]string{}}
	err := src.EachRequest(func(r *timeline.Request) error {
		if r.Status/100 != 2 || r.BodySize > timeline.MaxBody {
			return nil
		}
		m := b.bodies[r.Phase]
		if m == nil {
			m = map[string]string{}
			b.bodies[r.Phase] = m
		}
		if _, ok := m[r.Target]; ok || len(m) < maxBaselineTargets {
			m[r.Target] = r.Body
		}
		return nil
	})
	return b, err
}

// maxRoutes bounds the targets routeCache remembers.
const maxRoutes = 1 << 16

// routeCache remembers the Route of each target: Route matches every
// segment against a regular expression, too slow to do per request.
type routeCache struct {
	m map[string]string
}

func newRouteCache() *routeCache { return &routeCache{m: map[string]string{}} }

func (c *routeCache) route(r *timeline.Request) string {
	if rt, ok := c.m[r.Target]; ok {
		return rt
	}
	rt := Route(r)
	if len(c.m) < maxRoutes {
		c.m[r.Target] = rt
	}
	return rt
}
