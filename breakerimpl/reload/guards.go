package reload

import (
	"maps"
	"math"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// Timeout is a timeout's entry: the time a call may take, for calls that
// begin after the file is applied, and the bound on abandoned calls.
type Timeout struct {
	Timeout      *time.Duration `yaml:"timeout"`
	MaxAbandoned *int           `yaml:"max_abandoned"`
}

// Bulkhead is a bulkhead's entry (see bulkhead.Settings). A lowered
// max_concurrent takes no slot back from calls holding one.
type Bulkhead struct {
	MaxConcurrent *int           `yaml:"max_concurrent"`
	MaxWait       *time.Duration `yaml:"max_wait"`
	MaxQueue      *int           `yaml:"max_queue"`
}

// Fallback is a fallback toggle's entry: enabled false makes the fallbacks
// of the toggle serve nothing, so that callers get the primary's error.
type Fallback struct {
	Enabled *bool `yaml:"enabled"`
}

// Health is a health score's entry (see health.Tuning).
type Health struct {
	Threshold     *float64       `yaml:"threshold"`
	LatencyTarget *time.Duration `yaml:"latency_target"`
	LatencyLimit  *time.Duration `yaml:"latency_limit"`
	MaxErrorRate  *float64       `yaml:"max_error_rate"`
	MinRequests   *int           `yaml:"min_requests"`
}

// Degrade is a degrade switch's entry (see degrade.Tuning); threshold and
// release are in the unit of the switch's signal.
type Degrade struct {
	Threshold     *float64       `yaml:"threshold"`
	Release       *float64       `yaml:"release"`
	For           *time.Duration `yaml:"for"`
	Hold          *time.Duration `yaml:"hold"`
	Interval      *time.Duration `yaml:"interval"`
	ProbeInterval *time.Duration `yaml:"probe_interval"`
}

// AddTimeout registers a timeout under name.
func (t *Targets) AddTimeout(name string, to *timeout.Timeout) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timeouts = set(t.timeouts, name, to)
}

// AddBulkhead registers a bulkhead under name.
func (t *Targets) AddBulkhead(name string, b *bulkhead.Bulkhead) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bulkheads = set(t.bulkheads, name, b)
}

// AddFallback registers a fallback toggle under name (see
// fallback.Toggled).
func (t *Targets) AddFallback(name string, f *fallback.Toggle) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fallbacks = set(t.fallbacks, name, f)
}

// AddHealth registers a health score under name.
func (t *Targets) AddHealth(name string, h *health.Score) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.health = set(t.health, name, h)
}

// AddDegrade registers a degrade switch under name.
func (t *Targets) AddDegrade(name string, w *degrade.Switch) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.degrade = set(t.degrade, name, w)
}

// Timeouts returns the registered timeouts, by name.
func (t *Targets) Timeouts() map[string]*timeout.Timeout {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.timeouts)
}

// Bulkheads returns the registered bulkheads, by name.
func (t *Targets) Bulkheads() map[string]*bulkhead.Bulkhead {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.bulkheads)
}

// Fallbacks returns the registered fallback toggles, by name.
func (t *Targets) Fallbacks() map[string]*fallback.Toggle {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.fallbacks)
}

// HealthScores returns the registered health scores, by name.
func (t *Targets) HealthScores() map[string]*health.Score {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.health)
}

// DegradeSwitches returns the registered degrade switches, by name.
func (t *Targets) DegradeSwitches() map[string]*degrade.Switch {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.degrade)
}

// checkGuards checks the entries of timeouts, bulkheads, fallbacks, health
// scores and degrade switches, and returns their edits; t.mu is held.
func (t *Targets) checkGuards(c *checker, p *Policies) []func() {
	var apply []func()
	for _, name := range sortedKeys(p.Timeouts) {
		at := "$.timeouts." + quoteKey(name)
		to, ok := t.timeouts[name]
		if !ok {
			c.unknown(at, "timeout", name, sortedKeys(t.timeouts))
			continue
		}
		e := p.Timeouts[name]
		if e.Timeout != nil && *e.Timeout <= 0 {
			c.errorf(at+".timeout", "timeout %v: want a duration above 0, such as 150ms", *e.Timeout)
		}
		if e.MaxAbandoned != nil && *e.MaxAbandoned < 1 {
			c.errorf(at+".max_abandoned", "max_abandoned %d: want 1 or more", *e.MaxAbandoned)
		}
		apply = append(apply, func() {
			if e.Timeout != nil {
				to.SetTimeout(*e.Timeout)
			}
			if e.MaxAbandoned != nil {
				to.SetMaxAbandoned(*e.MaxAbandoned)
			}
		})
	}
	for _, name := range sortedKeys(p.Bulkheads) {
		at := "$.bulkheads." + quoteKey(name)
		b, ok := t.bulkheads[name]
		if !ok {
			c.unknown(at, "bulkhead", name, sortedKeys(t.bulkheads))
			continue
		}
		e := p.Bulkheads[name]
		if e.MaxConcurrent != nil && *e.MaxConcurrent < 1 {
			c.errorf(at+".max_concurrent", "max_concurrent %d: want 1 or more", *e.MaxConcurrent)
		}
		if e.MaxWait != nil && *e.MaxWait < 0 {
			c.errorf(at+".max_wait", "max_wait %v: want 0 (reject at once) or a duration, such as 50ms", *e.MaxWait)
		}
		if e.MaxQueue != nil && *e.MaxQueue < 1 {
			c.errorf(at+".max_queue", "max_queue %d: want 1 or more", *e.MaxQueue)
		}
		apply = append(apply, func() { setBulkhead(b, e) })
	}
	for _, name := range sortedKeys(p.Fallbacks) {
		at := "$.fallbacks." + quoteKey(name)
		f, ok := t.fallbacks[name]
		if !ok {
			c.unknown(at, "fallback", name, sortedKeys(t.fallbacks))
			continue
		}
		if e := p.Fallbacks[name]; e.Enabled != nil {
			on := *e.Enabled
			apply = append(apply, func() { f.SetEnabled(on) })
		}
	}
	for _, name := range sortedKeys(p.Health) {
		at := "$.health." + quoteKey(name)
		h, ok := t.health[name]
		if !ok {
			c.unknown(at, "health score", name, sortedKeys(t.health))
			continue
		}
		if tu, ok := c.health(at, p.Health[name], h.Tuning()); ok {
			apply = append(apply, func() { h.Tune(tu) })
		}
	}
	for _, name := range sortedKeys(p.Degrade) {
		at := "$.degrade." + quoteKey(name)
		w, ok := t.degrade[name]
		if !ok {
			c.unknown(at, "degrade switch", name, sortedKeys(t.degrade))
			continue
		}
		if tu, ok := c.degrade(at, p.Degrade[name], w.Tuning()); ok {
			apply = append(apply, func() { w.Tune(tu) })
		}
	}
	return apply
}

func setBulkhead(b *bulkhead.Bulkhead, e Bulkhead) {
	if e.MaxQueue != nil {
		b.SetMaxQueue(*e.MaxQueue)
	}
	if e.MaxWait != nil {
		b.SetMaxWait(*e.MaxWait)
	}
	if e.MaxConcurrent != nil {
		b.SetMaxConcurrent(*e.MaxConcurrent)
	}
}

// health checks a health score's entry against the figures in force and
// returns the figures to put in force.
func (c *checker) health(at string, e Health, cur health.Tuning) (health.Tuning, bool) {
	n := len(c.errs)
	if v := e.Threshold; v != nil && !(*v < 1) {
		c.errorf(at+".threshold", "threshold %v: want a score under 1 (below 0: always healthy)", *v)
	}
	if v := e.LatencyTarget; v != nil && *v <= 0 {
		c.errorf(at+".latency_target", "latency_target %v: want a duration above 0, such as 100ms", *v)
	}
	if v := e.LatencyLimit; v != nil && *v <= 0 {
		c.errorf(at+".latency_limit", "latency_limit %v: want a duration above 0, such as 400ms", *v)
	}
	if v := e.MaxErrorRate; v != nil && !(*v > 0 && *v <= 1) {
		c.errorf(at+".max_error_rate", "max_error_rate %v: want a share above 0, at most 1", *v)
	}
	if v := e.MinRequests; v != nil && *v < 1 {
		c.errorf(at+".min_requests", "min_requests %d: want 1 or more", *v)
	}
	if len(c.errs) > n {
		return cur, false
	}
	tu := cur
	setIf(&tu.Threshold, e.Threshold)
	setIf(&tu.LatencyTarget, e.LatencyTarget)
	setIf(&tu.LatencyLimit, e.LatencyLimit)
	setIf(&tu.MaxErrorRate, e.MaxErrorRate)
	setIf(&tu.MinRequests, e.MinRequests)
	if tu.LatencyLimit <= tu.LatencyTarget {
		field := ".latency_limit"
		if e.LatencyLimit == nil {
			field = ".latency_target"
		}
		c.errorf(at+field, "latency_limit %v is not above latency_target %v: want it longer", tu.LatencyLimit, tu.LatencyTarget)
		return cur, false
	}
	return tu, true
}

// degrade checks a degrade switch's entry against the figures in force and
// returns the figures to put in force.
func (c *checker) degrade(at string, e Degrade, cur degrade.Tuning) (degrade.Tuning, bool) {
	n := len(c.errs)
	if v := e.Threshold; v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
		c.errorf(at+".threshold", "threshold %v: want a number in the unit of the switch's signal", *v)
	}
	if v := e.Release; v != nil && math.IsNaN(*v) {
		c.errorf(at+".release", "release %v: want a number at most the threshold (-.inf: never release)", *v)
	}
	for _, d := range []struct {
		key string
		v   *time.Duration
	}{{"for", e.For}, {"hold", e.Hold}} {
		if d.v != nil && *d.v < 0 {
			c.errorf(at+"."+d.key, "%s %v: want 0 (at the first reading) or a duration, such as 1s", d.key, *d.v)
		}
	}
	if v := e.Interval; v != nil && *v <= 0 {
		c.errorf(at+".interval", "interval %v: want a duration above 0, such as 100ms", *v)
	}
	if len(c.errs) > n {
		return cur, false
	}
	tu := cur
	setIf(&tu.Threshold, e.Threshold)
	setIf(&tu.Release, e.Release)
	setIf(&tu.For, e.For)
	setIf(&tu.Hold, e.Hold)
	setIf(&tu.Interval, e.Interval)
	setIf(&tu.ProbeInterval, e.ProbeInterval)
	if tu.Release > tu.Threshold {
		if e.Release != nil {
			c.errorf(at+".release", "release %v is above threshold %v: want it at most the threshold", tu.Release, tu.Threshold)
			return cur, false
		}
		tu.Release = tu.Threshold // a threshold lowered under the release in force takes it along
	}
	return tu, true
}

// guardSettings are the settings of the timeouts, bulkheads, fallbacks,
// health scores and degrade switches in a Version.
type guardSettings struct {
	timeouts  map[string]timeoutSettings
	bulkheads map[string]bulkhead.Settings
	fallbacks map[string]bool
	health    map[string]health.Tuning
	degrade   map[string]degrade.Tuning
}

type timeoutSettings struct {
	d            time.Duration
	maxAbandoned int
}

// captureGuards records the settings in force; t.mu is held.
func (t *Targets) captureGuards() guardSettings {
	g := guardSettings{
		timeouts: map[string]timeoutSettings{}, bulkheads: map[string]bulkhead.Settings{},
		fallbacks: map[string]bool{}, health: map[string]health.Tuning{}, degrade: map[string]degrade.Tuning{},
	}
	for n, to := range t.timeouts {
		g.timeouts[n] = timeoutSettings{to.Timeout(), to.MaxAbandoned()}
	}
	for n, b := range t.bulkheads {
		g.bulkheads[n] = b.Settings()
	}
	for n, f := range t.fallbacks {
		g.fallbacks[n] = f.Enabled()
	}
	for n, h := range t.health {
		g.health[n] = h.Tuning()
	}
	for n, w := range t.degrade {
		g.degrade[n] = w.Tuning()
	}
	return g
}

// restoreGuards puts g's settings in force on the targets still
// registered; t.mu is held.
func (t *Targets) restoreGuards(g guardSettings) {
	for n, s := range g.timeouts {
		if to, ok := t.timeouts[n]; ok {
			to.SetTimeout(s.d)
			to.SetMaxAbandoned(s.maxAbandoned)
		}
	}
	for n, s := range g.bulkheads {
		if b, ok := t.bulkheads[n]; ok {
			b.SetMaxQueue(s.MaxQueue)
			b.SetMaxWait(s.MaxWait)
			b.SetMaxConcurrent(s.MaxConcurrent)
		}
	}
	for n, on := range g.fallbacks {
		if f, ok := t.fallbacks[n]; ok {
			f.SetEnabled(on)
		}
	}
	for n, tu := range g.health {
		if h, ok := t.health[n]; ok {
			h.Tune(tu)
		}
	}
	for n, tu := range g.degrade {
		if w, ok := t.degrade[n]; ok {
			w.Tune(tu)
		}
	}
}
