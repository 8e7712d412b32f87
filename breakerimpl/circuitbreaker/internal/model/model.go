// Package model checks a circuit breaker against a reference model: a
// small, obviously sequential restatement of the rules in the
// circuitbreaker package's documentation. Check replays a sequence of
// operations decoded from bytes on both and reports the first
// disagreement. It is the one body behind the native fuzz target
// (circuitbreaker's FuzzBreakerModel) and the go-fuzz one (Fuzz, built
// with the gofuzz tag).
package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
)

// The operations, one per byte (modulo opCount); some read the next byte
// as their operand.
const (
	opSuccess     = iota // a call that succeeds
	opFailure            // a call that fails
	opSlow               // a call that succeeds after slow+1ms (a failure if slow-call detection is on)
	opIgnored            // a call that returns context.Canceled
	opAdvance            // operand × 10 ms pass
	opUpdate             // operand picks a setting and its new value
	opForce              // operand % 3: force open, force closed, resume
	opHold               // Allow, keeping the permit
	opReleaseOK          // the oldest held permit ends in success
	opReleaseFail        // the oldest held permit ends in failure
	opCount
)

const (
	width   = 250 * time.Millisecond // bucket width of the error-rate rule
	buckets = 4
	slow    = 50 * time.Millisecond
	maxOpen = 2 * time.Second
)

// halfOpenWait is the MaxHalfOpenWait the model starts with: short, so
// that held probes outlast it.
const halfOpenWait = time.Second

var errDown = errors.New("down")

// Check decodes data and replays it on a breaker and on the model. The
// first byte chooses the rule (bit 0: ConsecutiveFailures or ErrorRate)
// and slow-call detection (bit 1); the rest are operations.
func Check(data []byte) error {
	if len(data) == 0 {
		return nil
	}
	m := &model{consecutive: data[0]&1 == 0, threshold: 3, minRequests: 4, percent: 50,
		openDuration: 500 * time.Millisecond, probes: 2, successes: 2, halfOpenWait: halfOpenWait}
	if data[0]&2 != 0 {
		m.slow = slow
	}
	clk := clock.NewFake(time.Time{})
	cb := circuitbreaker.New(m.settings(clk))
	var held []breakerimpl.Permit
	data = data[1:]
	operand := func() int {
		if len(data) == 0 {
			return 0
		}
		v := int(data[0])
		data = data[1:]
		return v
	}
	for step := 0; len(data) > 0; step++ {
		op := int(data[0]) % opCount
		data = data[1:]
		where := func(format string, args ...any) error {
			return fmt.Errorf("step %d (op %d): %s", step, op, fmt.Sprintf(format, args...))
		}
		switch op {
		case opSuccess, opFailure, opSlow, opIgnored:
			var err error
			var took time.Duration
			switch op {
			case opFailure:
				err = errDown
			case opSlow:
				took = slow + time.Millisecond
			case opIgnored:
				err = context.Canceled
			}
			want := m.allow(false)
			ran := false
			_, got := circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) {
				ran = true
				clk.Advance(took)
				return 0, err
			})
			if ran != (want == nil) || !ran && !errors.Is(got, want) {
				return where("call ran %v with error %v; model: %v", ran, got, want)
			}
			if ran {
				m.now += took
				m.done(m.lastPermit, err)
			}
		case opAdvance:
			d := time.Duration(operand()) * 10 * time.Millisecond
			clk.Advance(d)
			m.now += d
		case opUpdate:
			m.update(cb, operand())
		case opForce:
			switch operand() % 3 {
			case 0:
				cb.ForceOpen("fuzz")
				m.force(circuitbreaker.ForcedOpen)
			case 1:
				cb.ForceClosed("fuzz")
				m.force(circuitbreaker.ForcedClosed)
			default:
				cb.ResumeAutomatic("fuzz")
				m.force(circuitbreaker.Automatic)
			}
		case opHold:
			want := m.allow(true)
			p, got := cb.Allow(context.Background())
			if (got == nil) != (want == nil) || got != nil && !errors.Is(got, want) {
				return where("Allow: %v; model: %v", got, want)
			}
			if got == nil {
				held = append(held, p)
			}
		case opReleaseOK, opReleaseFail:
			if len(held) == 0 {
				continue
			}
			var err error
			if op == opReleaseFail {
				err = errDown
			}
			held[0].Done(err)
			held = held[1:]
			m.done(m.held[0], err)
			m.held = m.held[1:]
		}
		if got, want := cb.State(), m.state(); got != want {
			return where("state %v; model: %v", got, want)
		}
		if got, want := cb.Counts(), m.counts(); got != want {
			return where("counts %+v; model: %+v", got, want)
		}
		s := cb.Snapshot()
		got := [...]uint64{s.Successes, s.Failures, s.Ignored, s.SlowCalls, s.Rejections, s.StateChanges, uint64(s.ProbesRunning)}
		want := [...]uint64{m.lifetime.successes, m.lifetime.failures, m.lifetime.ignored, m.lifetime.slow, m.lifetime.rejections, m.changes, uint64(m.probesRunning)}
		if got != want {
			return where("snapshot successes, failures, ignored, slow, rejections, changes, probes = %v; model: %v", got, want)
		}
		if s.Override != m.override {
			return where("override %v; model: %v", s.Override, m.override)
		}
	}
	return nil
}

// model is the reference: plain fields, one call at a time.
type model struct {
	// Settings.
	consecutive          bool
	threshold            int // ConsecutiveFailures
	minRequests, percent int // ErrorRate
	openDuration         time.Duration
	halfOpenWait         time.Duration
	slow                 time.Duration
	probes, successes    int
	now                  time.Duration // the fake clock
	raw                  circuitbreaker.State
	override             circuitbreaker.Override
	gen                  uint64
	since, until         time.Duration // until: Open, when it ends; HalfOpen, when the wait ends
	streak               int
	run                  int           // Closed, ConsecutiveFailures: failures in a row
	windowStart          time.Duration // Closed, ErrorRate: buckets are aligned on it
	outcomes             []outcome     // Closed, ErrorRate
	passed               int           // HalfOpen
	probesRunning        int           // slots held, whatever stay admitted them
	abandoned            uint64        // probes of this generation or older hold no slot
	held                 []permit
	lastPermit           permit
	changes              uint64
	lifetime             struct{ successes, failures, ignored, slow, rejections uint64 }
}

type outcome struct {
	at     time.Duration
	failed bool
}

type permit struct {
	gen   uint64
	probe bool
	start time.Duration
}

func (m *model) settings(clk clock.Clock) circuitbreaker.Settings {
	s := circuitbreaker.Settings{
		Rule:              circuitbreaker.ConsecutiveFailures{Threshold: m.threshold},
		OpenDuration:      m.openDuration,
		MaxOpenDuration:   maxOpen,
		HalfOpenProbes:    m.probes,
		HalfOpenSuccesses: m.successes,
		MaxHalfOpenWait:   m.halfOpenWait,
		SlowCallThreshold: m.slow,
		Clock:             clk,
	}
	if !m.consecutive {
		s.Rule = circuitbreaker.ErrorRate{Window: buckets * width, Buckets: buckets, MinRequests: m.minRequests, Percent: m.percent}
	}
	return s
}

// state is Breaker.State: an open breaker whose time is up becomes
// half-open when asked, and a half-open one whose probes did not decide
// within the wait opens again, abandoning them.
func (m *model) state() circuitbreaker.State {
	if m.raw != circuitbreaker.Closed && m.now >= m.until {
		if m.raw == circuitbreaker.Open {
			m.enter(circuitbreaker.HalfOpen, m.override)
		} else {
			m.probesRunning, m.abandoned = 0, m.gen
			m.enter(circuitbreaker.Open, m.override)
		}
	}
	return m.raw
}

func (m *model) openFor() time.Duration {
	if maxOpen <= m.openDuration {
		return m.openDuration
	}
	return time.Duration(min(float64(m.openDuration)*math.Pow(2, float64(m.streak)), float64(maxOpen)))
}

func (m *model) enter(to circuitbreaker.State, ov circuitbreaker.Override) {
	from := m.raw
	m.raw, m.override, m.since = to, ov, m.now
	m.gen++
	m.changes++
	switch to {
	case circuitbreaker.Open:
		if ov == circuitbreaker.ForcedOpen {
			m.until = math.MaxInt64
			m.streak = 0
			break
		}
		if from == circuitbreaker.HalfOpen {
			m.streak++
		} else {
			m.streak = 0
		}
		m.until = m.now + m.openFor()
	case circuitbreaker.HalfOpen:
		m.passed = 0
		m.until = m.now + m.halfOpenWait
	case circuitbreaker.Closed:
		m.run, m.windowStart, m.outcomes = 0, m.now, nil
	}
}

// allow returns the refusal the breaker must give, or nil and records the
// permit (held, or in lastPermit for a call run at once).
func (m *model) allow(hold bool) error {
	p := permit{gen: m.gen, start: m.now}
	switch m.state() {
	case circuitbreaker.Open:
		m.lifetime.rejections++
		return circuitbreaker.ErrOpen
	case circuitbreaker.HalfOpen:
		if m.probesRunning >= m.probes {
			m.lifetime.rejections++
			return circuitbreaker.ErrHalfOpenFull
		}
		m.probesRunning++
		p.probe = true
	}
	p.gen = m.gen
	if hold {
		m.held = append(m.held, p)
	} else {
		m.lastPermit = p
	}
	return nil
}

func (m *model) done(p permit, err error) {
	if p.probe && p.gen > m.abandoned {
		m.probesRunning--
	}
	failed := err != nil
	switch {
	case errors.Is(err, context.Canceled):
		m.lifetime.ignored++
		return
	case !failed && m.slow > 0 && m.now-p.start > m.slow:
		failed = true
		m.lifetime.slow++
	}
	if failed {
		m.lifetime.failures++
	} else {
		m.lifetime.successes++
	}
	if p.gen != m.gen {
		return
	}
	switch m.raw {
	case circuitbreaker.Closed:
		trip := false
		if m.consecutive {
			if failed {
				m.run++
				trip = m.run >= m.threshold
			} else {
				m.run = 0
			}
		} else {
			m.outcomes = append(m.outcomes, outcome{at: m.now, failed: failed})
			c := m.counts()
			trip = failed && c.Requests >= uint64(m.minRequests) && c.Failures*100 >= uint64(m.percent)*c.Requests
		}
		if trip && m.override == circuitbreaker.Automatic {
			m.enter(circuitbreaker.Open, m.override)
		}
	case circuitbreaker.HalfOpen:
		if failed {
			m.enter(circuitbreaker.Open, m.override)
		} else if m.passed++; m.passed >= m.successes {
			m.enter(circuitbreaker.Closed, m.override)
		}
	}
}

func (m *model) counts() circuitbreaker.Counts {
	switch m.raw {
	case circuitbreaker.Closed:
		if m.consecutive {
			return circuitbreaker.Counts{ConsecutiveFailures: uint64(m.run)}
		}
		var c circuitbreaker.Counts
		live := int64((m.now - m.windowStart) / width)
		for _, o := range m.outcomes {
			if int64((o.at-m.windowStart)/width) > live-buckets {
				c.Requests++
				if o.failed {
					c.Failures++
				} else {
					c.Successes++
				}
			}
		}
		return c
	case circuitbreaker.HalfOpen:
		return circuitbreaker.Counts{Requests: uint64(m.passed), Successes: uint64(m.passed)}
	}
	return circuitbreaker.Counts{}
}

func (m *model) force(ov circuitbreaker.Override) {
	switch {
	case ov == circuitbreaker.ForcedOpen:
		m.enter(circuitbreaker.Open, ov)
	case ov == circuitbreaker.ForcedClosed && m.raw != circuitbreaker.Closed:
		m.enter(circuitbreaker.Closed, ov)
	case ov == circuitbreaker.Automatic && m.override == circuitbreaker.ForcedOpen:
		m.enter(circuitbreaker.HalfOpen, ov)
	default:
		m.override = ov
		m.changes++
	}
}

// update changes one setting on both, as an operator would under load.
func (m *model) update(cb *circuitbreaker.Breaker, v int) {
	switch v % 6 {
	case 0:
		m.threshold = 1 + v/6%5
	case 1:
		m.minRequests, m.percent = 1+v/6%8, 10+v/6%91
	case 2:
		m.openDuration = time.Duration(1+v/6%30) * 100 * time.Millisecond
	case 3:
		m.probes = 1 + v/6%3
	case 4:
		m.successes = 1 + v/6%3
	case 5:
		m.halfOpenWait = time.Duration(1+v/6%20) * 100 * time.Millisecond
	}
	cb.Update(func(s *circuitbreaker.Settings) {
		n := m.settings(s.Clock)
		s.Rule, s.OpenDuration, s.HalfOpenProbes, s.HalfOpenSuccesses, s.MaxHalfOpenWait = n.Rule, n.OpenDuration, n.HalfOpenProbes, n.HalfOpenSuccesses, n.MaxHalfOpenWait
	})
	switch {
	case m.raw == circuitbreaker.Open && m.override != circuitbreaker.ForcedOpen:
		m.until = m.since + m.openFor()
	case m.raw == circuitbreaker.HalfOpen:
		m.until = m.since + m.halfOpenWait
	}
}
