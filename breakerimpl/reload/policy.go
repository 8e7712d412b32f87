// Package reload reads the settings of live policies (breakers, retries,
// rate limiters, timeouts, bulkheads, fallbacks, health scores and degrade
// switches) from a YAML policy file and applies them, again each time the
// file changes, keeping their counts: an operator tunes a dependency's
// breaker, retries or timeout without a restart.
//
//	breakers:
//	  db:
//	    error_rate: {window: 1s, buckets: 10, min_requests: 20, percent: 50}
//	    open_duration: 1s
//	  orders-db:
//	    consecutive_failures: 3
//	  payments:
//	    count_window: {calls: 100, percent: 50, slow_percent: 30}
//	    slow_call_threshold: 500ms
//	retries:
//	  recommendations:
//	    max_retries: 2       # attempts after the first
//	    base_delay: 5ms      # the first wait's ceiling, doubling after
//	    max_delay: 20ms
//	    jitter: 1            # share of each wait drawn at random: 1 full, 0 none
//	limiters:
//	  search:
//	    rate: 2000           # tokens a second
//	    burst: 200
//	timeouts:
//	  recommendations:
//	    timeout: 150ms
//	    max_abandoned: 100   # Abandon mode: abandoned calls running at most
//	bulkheads:
//	  recommendations:
//	    max_concurrent: 10
//	    max_wait: 0s         # 0: reject at once; above: wait in a queue
//	    max_queue: 10
//	fallbacks:
//	  product-cache:
//	    enabled: false       # the primary's error reaches the caller
//	health:
//	  recommendations-grpc:
//	    threshold: 0.6
//	    latency_target: 100ms
//	    latency_limit: 400ms
//	    max_error_rate: 0.5
//	    min_requests: 10
//	degrade:
//	  db-p95:
//	    threshold: 0.1       # in the signal's unit
//	    release: 0.05
//	    for: 500ms
//	    hold: 1s
//
// Each policy is named as it was registered in Targets; a field left out
// keeps the value in force. A file is applied whole or not at all: an
// unknown field or policy, a value of the wrong type or out of range, and
// the file is refused with an error naming file:line:column and what would
// be right, and every policy keeps its settings.
//
// Every file applied is a Version holding every setting of every target;
// Targets.Rollback restores a named one (package admin serves both over
// HTTP).
//
// Watch applies the file once, then again whenever it changes. It watches
// the file's directory, not the file, with fsnotify: editors and config
// managers that write a new file and rename it over the old one (vim,
// kubectl's atomic writes) replace the inode a file watch would follow.
package reload

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/health"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// Policies is the content of a policy file.
type Policies struct {
	Breakers  map[string]Breaker  `yaml:"breakers"`
	Retries   map[string]Retry    `yaml:"retries"`
	Limiters  map[string]Limiter  `yaml:"limiters"`
	Timeouts  map[string]Timeout  `yaml:"timeouts"`
	Bulkheads map[string]Bulkhead `yaml:"bulkheads"`
	Fallbacks map[string]Fallback `yaml:"fallbacks"`
	Health    map[string]Health   `yaml:"health"`
	Degrade   map[string]Degrade  `yaml:"degrade"`
}

// Breaker is a breaker's entry. ErrorRate and ConsecutiveFailures choose
// the trip rule (at most one); OpenDuration is how long it stays open.
type Breaker struct {
	ErrorRate           *ErrorRate     `yaml:"error_rate"`
	ConsecutiveFailures *int           `yaml:"consecutive_failures"`
	OpenDuration        *time.Duration `yaml:"open_duration"`
	HalfOpenProbes      *int           `yaml:"half_open_probes"`
	// CountWindow is resilience4j's count-based rule over the last calls,
	// with a slow-call rate; SlowCallThreshold says what is slow.
	CountWindow       *CountWindow   `yaml:"count_window"`
	SlowCallThreshold *time.Duration `yaml:"slow_call_threshold"`
}

// CountWindow is the entry of circuitbreaker.CountWindow.
type CountWindow struct {
	Calls       *int `yaml:"calls"`
	MinRequests *int `yaml:"min_requests"`
	Percent     *int `yaml:"percent"`
	SlowPercent *int `yaml:"slow_percent"`
}

// ErrorRate is hystrix's rule: open when Percent of at least MinRequests
// calls in the last Window (of Buckets buckets) failed.
type ErrorRate struct {
	Window      *time.Duration `yaml:"window"`
	Buckets     *int           `yaml:"buckets"`
	MinRequests *int           `yaml:"min_requests"`
	Percent     *int           `yaml:"percent"`
}

// Retry is a retry policy's entry.
type Retry struct {
	MaxRetries *int           `yaml:"max_retries"`
	BaseDelay  *time.Duration `yaml:"base_delay"`
	MaxDelay   *time.Duration `yaml:"max_delay"`
	Jitter     *float64       `yaml:"jitter"`
}

// Limiter is a token bucket's entry.
type Limiter struct {
	Rate  *float64 `yaml:"rate"`
	Burst *int     `yaml:"burst"`
}

// Error is a problem in a policy file, at a line and column (0 when not
// known).
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

// Error returns "file:line:col: msg".
func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Targets are the live policies a policy file may tune, by name. Register
// them before Apply or Watch; it is safe for concurrent use.
type Targets struct {
	mu        sync.Mutex
	breakers  map[string]*circuitbreaker.Breaker
	retries   map[string]*retry.Retry
	limiters  map[string]*ratelimit.TokenBucket
	timeouts  map[string]*timeout.Timeout
	bulkheads map[string]*bulkhead.Bulkhead
	fallbacks map[string]*fallback.Toggle
	health    map[string]*health.Score
	degrade   map[string]*degrade.Switch
	versions  []Version // see Versions
	seq       int       // the number of the last version
}

// Breakers returns the registered breakers, by name.
func (t *Targets) Breakers() map[string]*circuitbreaker.Breaker {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.breakers)
}

// Retries returns the registered retry policies, by name.
func (t *Targets) Retries() map[string]*retry.Retry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.retries)
}

// Limiters returns the registered token buckets, by name.
func (t *Targets) Limiters() map[string]*ratelimit.TokenBucket {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.limiters)
}

// AddBreaker registers breakers under their names.
func (t *Targets) AddBreaker(bs ...*circuitbreaker.Breaker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range bs {
		t.breakers = set(t.breakers, b.Name(), b)
	}
}

// AddRetry registers a retry policy under name.
func (t *Targets) AddRetry(name string, r *retry.Retry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.retries = set(t.retries, name, r)
}

// AddLimiter registers a token bucket under name.
func (t *Targets) AddLimiter(name string, l *ratelimit.TokenBucket) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limiters = set(t.limiters, name, l)
}

func set[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

// looksLikePolicies says whether data is empty or a YAML mapping whose
// every top-level key is one a policy file has.
func looksLikePolicies(data []byte) bool {
	var top map[string]any
	if err := yaml.Unmarshal(data, &top); err != nil {
		return false
	}
	for k := range top {
		switch k {
		case "breakers", "retries", "limiters", "timeouts", "bulkheads", "fallbacks", "health", "degrade":
		default:
			return false
		}
	}
	return true
}

// Parse reads a policy file's content; file names it in errors. Every
// problem is reported, each as an *Error, joined.
func Parse(file string, data []byte) (*Policies, error) {
	if !looksLikePolicies(data) {
		// Said without quoting the file: a path given by mistake (or on
		// purpose) may name a secret.
		return nil, &Error{File: file, Msg: "not a policy file: its top level is no mapping of breakers, retries, limiters, timeouts, bulkheads, fallbacks, health and degrade (nothing of it is shown)"}
	}
	var p Policies
	if err := yaml.UnmarshalWithOptions(data, &p, yaml.DisallowUnknownField()); err != nil {
		e := &Error{File: file, Msg: err.Error()}
		var ye yaml.Error
		if errors.As(err, &ye) {
			e.Msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				e.Line, e.Col = tk.Position.Line, tk.Position.Column
			}
		}
		if e.Line == 0 {
			// A duration that does not parse comes without a position.
			if f, perr := parser.ParseBytes(data, 0); perr == nil {
				if bad := badDuration(f); bad != nil {
					return nil, &Error{File: file, Line: bad.line, Col: bad.col, Msg: bad.msg}
				}
			}
		}
		return nil, e
	}
	return &p, nil
}

// Apply checks p against the targets and, if every entry names a
// registered policy and every value is in range, applies them all; the
// policies keep their counts. Otherwise it changes nothing and returns
// every problem. data is the file p was parsed from, for positions; it may
// be nil.
func (t *Targets) Apply(file string, data []byte, p *Policies) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := checker{file: file}
	if data != nil {
		c.ast, _ = parser.ParseBytes(data, 0)
	}
	var apply []func()
	for _, name := range sortedKeys(p.Breakers) {
		at := "$.breakers." + quoteKey(name)
		b, ok := t.breakers[name]
		if !ok {
			c.unknown(at, "breaker", name, sortedKeys(t.breakers))
			continue
		}
		if f := c.breaker(at, p.Breakers[name]); f != nil {
			apply = append(apply, func() { b.Update(f) })
		}
	}
	for _, name := range sortedKeys(p.Retries) {
		at := "$.retries." + quoteKey(name)
		r, ok := t.retries[name]
		if !ok {
			c.unknown(at, "retry", name, sortedKeys(t.retries))
			continue
		}
		if f := c.retry(at, p.Retries[name], r.Settings()); f != nil {
			apply = append(apply, func() { r.Update(f) })
		}
	}
	for _, name := range sortedKeys(p.Limiters) {
		at := "$.limiters." + quoteKey(name)
		l, ok := t.limiters[name]
		if !ok {
			c.unknown(at, "limiter", name, sortedKeys(t.limiters))
			continue
		}
		e := p.Limiters[name]
		if e.Rate != nil && (*e.Rate <= 0 || math.IsInf(*e.Rate, 0) || math.IsNaN(*e.Rate)) {
			c.errorf(at+".rate", "rate %v: want tokens a second above 0", *e.Rate)
		}
		if e.Burst != nil && *e.Burst < 1 {
			c.errorf(at+".burst", "burst %d: want 1 or more", *e.Burst)
		}
		apply = append(apply, func() {
			if e.Rate != nil {
				l.Limiter().SetLimit(rate.Limit(*e.Rate))
			}
			if e.Burst != nil {
				l.Limiter().SetBurst(*e.Burst)
			}
		})
	}
	apply = append(apply, t.checkGuards(&c, p)...)
	if len(c.errs) > 0 {
		return errors.Join(c.errs...)
	}
	var initial *Version
	if len(t.versions) == 0 {
		v := t.capture("initial", "the settings the policies were made with")
		initial = &v
	}
	for _, f := range apply {
		f()
	}
	t.record(file, initial)
	return nil
}

// checker collects the problems of one file.
type checker struct {
	file string
	ast  *ast.File
	errs []error
}

func (c *checker) errorf(path, format string, args ...any) {
	e := &Error{File: c.file, Msg: fmt.Sprintf(format, args...)}
	e.Line, e.Col = c.position(path)
	c.errs = append(c.errs, e)
}

// unknown reports a policy name no target has, at its key.
func (c *checker) unknown(path, kind, name string, known []string) {
	hint := "no " + kind + " is registered"
	if len(known) > 0 {
		hint = "known: " + strings.Join(known, ", ")
	}
	e := &Error{File: c.file, Msg: fmt.Sprintf("unknown %s %q (%s)", kind, name, hint)}
	e.Line, e.Col = c.keyPosition(path[:strings.LastIndex(path, ".")], name)
	if e.Line == 0 {
		e.Line, e.Col = c.position(path)
	}
	c.errs = append(c.errs, e)
}

// keyPosition returns the line and column of key name in the mapping at
// parent.
func (c *checker) keyPosition(parent, name string) (int, int) {
	if c.ast == nil {
		return 0, 0
	}
	yp, err := yaml.PathString(parent)
	if err != nil {
		return 0, 0
	}
	n, err := yp.FilterFile(c.ast)
	if m, ok := n.(*ast.MappingNode); ok && err == nil {
		for _, mv := range m.Values {
			if tk := mv.Key.GetToken(); mv.Key.String() == name && tk != nil {
				return tk.Position.Line, tk.Position.Column
			}
		}
	}
	return 0, 0
}

// position returns the line and column of the node at a YAML path, or of
// its nearest ancestor that has one.
func (c *checker) position(path string) (int, int) {
	for c.ast != nil && path != "$" {
		if yp, err := yaml.PathString(path); err == nil {
			if n, err := yp.FilterFile(c.ast); err == nil && n != nil && n.GetToken() != nil {
				tk := n.GetToken()
				if m, ok := n.(*ast.MappingNode); ok && !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key.GetToken() != nil {
					tk = m.Values[0].Key.GetToken()
				}
				return tk.Position.Line, tk.Position.Column
			}
		}
		path = path[:strings.LastIndex(path, ".")]
	}
	return 0, 0
}

// breaker checks a breaker's entry and returns the edit of its settings,
// or nil if it has problems.
func (c *checker) breaker(at string, e Breaker) func(*circuitbreaker.Settings) {
	n := len(c.errs)
	if e.ErrorRate != nil && e.ConsecutiveFailures != nil {
		c.errorf(at+".consecutive_failures", "error_rate and consecutive_failures both given: choose one trip rule")
	}
	if e.CountWindow != nil && (e.ErrorRate != nil || e.ConsecutiveFailures != nil) {
		c.errorf(at+".count_window", "count_window and another trip rule given: choose one")
	}
	if r := e.CountWindow; r != nil {
		if r.Calls != nil && *r.Calls < 1 {
			c.errorf(at+".count_window.calls", "calls %d: want 1 or more", *r.Calls)
		}
		if r.MinRequests != nil && *r.MinRequests < 0 {
			c.errorf(at+".count_window.min_requests", "min_requests %d: want 0 or more", *r.MinRequests)
		}
		if r.Percent != nil && (*r.Percent <= 0 || *r.Percent > 100) {
			c.errorf(at+".count_window.percent", "percent %d: want 0 < percent <= 100", *r.Percent)
		}
		if r.SlowPercent != nil && (*r.SlowPercent < 0 || *r.SlowPercent > 100) {
			c.errorf(at+".count_window.slow_percent", "slow_percent %d: want 0 <= slow_percent <= 100 (0: slow calls are failures)", *r.SlowPercent)
		}
	}
	if e.SlowCallThreshold != nil && *e.SlowCallThreshold < 0 {
		c.errorf(at+".slow_call_threshold", "slow_call_threshold %v: want 0 (none) or a duration, such as 500ms", *e.SlowCallThreshold)
	}
	if r := e.ErrorRate; r != nil {
		if r.Window != nil && *r.Window <= 0 {
			c.errorf(at+".error_rate.window", "window %v: want a duration above 0, such as 10s", *r.Window)
		}
		if r.Buckets != nil && *r.Buckets < 1 {
			c.errorf(at+".error_rate.buckets", "buckets %d: want 1 or more", *r.Buckets)
		}
		if r.MinRequests != nil && *r.MinRequests < 0 {
			c.errorf(at+".error_rate.min_requests", "min_requests %d: want 0 or more", *r.MinRequests)
		}
		if r.Percent != nil && (*r.Percent <= 0 || *r.Percent > 100) {
			c.errorf(at+".error_rate.percent", "percent %d: want 0 < percent <= 100", *r.Percent)
		}
	}
	if e.ConsecutiveFailures != nil && *e.ConsecutiveFailures < 1 {
		c.errorf(at+".consecutive_failures", "consecutive_failures %d: want 1 or more", *e.ConsecutiveFailures)
	}
	if e.OpenDuration != nil && *e.OpenDuration <= 0 {
		c.errorf(at+".open_duration", "open_duration %v: want a duration above 0, such as 5s", *e.OpenDuration)
	}
	if e.HalfOpenProbes != nil && *e.HalfOpenProbes < 1 {
		c.errorf(at+".half_open_probes", "half_open_probes %d: want 1 or more", *e.HalfOpenProbes)
	}
	if len(c.errs) > n {
		return nil
	}
	return func(s *circuitbreaker.Settings) {
		if r := e.ErrorRate; r != nil {
			er, _ := s.Rule.(circuitbreaker.ErrorRate)
			setIf(&er.Window, r.Window)
			setIf(&er.Buckets, r.Buckets)
			setIf(&er.MinRequests, r.MinRequests)
			setIf(&er.Percent, r.Percent)
			s.Rule = er
		}
		if e.ConsecutiveFailures != nil {
			s.Rule = circuitbreaker.ConsecutiveFailures{Threshold: *e.ConsecutiveFailures}
		}
		if r := e.CountWindow; r != nil {
			cw, _ := s.Rule.(circuitbreaker.CountWindow)
			setIf(&cw.Calls, r.Calls)
			setIf(&cw.MinRequests, r.MinRequests)
			setIf(&cw.Percent, r.Percent)
			setIf(&cw.SlowPercent, r.SlowPercent)
			s.Rule = cw
		}
		setIf(&s.SlowCallThreshold, e.SlowCallThreshold)
		setIf(&s.OpenDuration, e.OpenDuration)
		setIf(&s.HalfOpenProbes, e.HalfOpenProbes)
	}
}

// retry checks a retry's entry against the settings in force and returns
// the edit, or nil if it has problems.
func (c *checker) retry(at string, e Retry, cur retry.Settings) func(*retry.Settings) {
	n := len(c.errs)
	if e.MaxRetries != nil && *e.MaxRetries < 0 {
		c.errorf(at+".max_retries", "max_retries %d: want 0 or more", *e.MaxRetries)
	}
	if e.BaseDelay != nil && *e.BaseDelay <= 0 {
		c.errorf(at+".base_delay", "base_delay %v: want a duration above 0, such as 100ms", *e.BaseDelay)
	}
	if e.MaxDelay != nil && *e.MaxDelay <= 0 {
		c.errorf(at+".max_delay", "max_delay %v: want a duration above 0, such as 10s", *e.MaxDelay)
	}
	base, top := cur.Backoff, cur.MaxBackoff
	setIf(&base, e.BaseDelay)
	setIf(&top, e.MaxDelay)
	if len(c.errs) == n && top < base {
		field := ".max_delay"
		if e.MaxDelay == nil {
			field = ".base_delay" // the one the file set
		}
		c.errorf(at+field, "max_delay %v is under base_delay %v: want it at least as long", top, base)
	}
	if e.Jitter != nil && !(*e.Jitter >= 0 && *e.Jitter <= 1) {
		c.errorf(at+".jitter", "jitter %v: want the share of each wait drawn at random, from 0 (none) to 1 (full)", *e.Jitter)
	}
	if len(c.errs) > n {
		return nil
	}
	return func(s *retry.Settings) {
		if e.MaxRetries != nil {
			s.MaxAttempts = *e.MaxRetries + 1
		}
		setIf(&s.Backoff, e.BaseDelay)
		setIf(&s.MaxBackoff, e.MaxDelay)
		if j := e.Jitter; j != nil {
			s.Jitter = *j
			if *j == 0 {
				s.Jitter = -1 // Settings' zero means full
			}
		}
	}
}

// durationKeys are the fields that hold a duration.
var durationKeys = map[string]bool{
	"window": true, "open_duration": true, "base_delay": true, "max_delay": true, "slow_call_threshold": true,
	"timeout": true, "max_wait": true, "latency_target": true, "latency_limit": true, "for": true, "hold": true,
	"interval": true, "probe_interval": true,
}

type badValue struct {
	line, col int
	msg       string
}

// badDuration finds the first duration field of f whose value does not
// parse as a duration.
func badDuration(f *ast.File) *badValue {
	var found *badValue
	for _, doc := range f.Docs {
		ast.Walk(visitor(func(n ast.Node) bool {
			mv, ok := n.(*ast.MappingValueNode)
			if !ok || found != nil || !durationKeys[mv.Key.String()] {
				return found == nil
			}
			v, ok := mv.Value.(*ast.StringNode)
			if !ok {
				return true
			}
			if _, err := time.ParseDuration(v.Value); err != nil && v.GetToken() != nil {
				tk := v.GetToken()
				found = &badValue{tk.Position.Line, tk.Position.Column, fmt.Sprintf("%s %q: want a duration such as 250ms or 2s", mv.Key.String(), v.Value)}
			}
			return true
		}), doc)
	}
	return found
}

// visitor adapts a function to ast.Visitor.
type visitor func(ast.Node) bool

func (v visitor) Visit(n ast.Node) ast.Visitor {
	if v(n) {
		return v
	}
	return nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// quoteKey writes a map key for a YAML path: names with dots or dashes
// are quoted.
func quoteKey(k string) string {
	if strings.ContainsAny(k, ".-[]'\" ") {
		return "'" + strings.ReplaceAll(k, "'", `\'`) + "'"
	}
	return k
}
