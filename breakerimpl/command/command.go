// Package command gives breakerimpl the habits of hystrix-go: named
// commands, configured once by name (ConfigureCommand), run synchronously
// (Do) or asynchronously (Go, which returns a channel of errors), each with
// a fallback function.
//
//	command.ConfigureCommand("payments", command.Config{Timeout: 500 * time.Millisecond, MaxConcurrentRequests: 20})
//	errs := command.Go(ctx, "payments", func(ctx context.Context) error {
//		return charge(ctx, order)
//	}, func(ctx context.Context, err error) error {
//		return queueForLater(order) // nil: handled
//	})
//	...
//	if err := <-errs; err != nil { ... }
//
// A command is a breakerimpl.Pipeline of a circuit breaker with hystrix's
// rule (ErrorPercentThreshold of at least RequestVolumeThreshold calls over
// a 10-second window opens it for SleepWindow), a semaphore bulkhead of
// MaxConcurrentRequests, and a Timeout; the names and defaults are
// hystrix-go's. As in hystrix-go, a call is answered at its timeout
// whatever run does: run goes on a goroutine of its own, and at the
// deadline Do returns timeout.ErrTimeout (or the fallback's answer), the
// breaker counts a failure, and run is abandoned, its context done and
// its late result discarded. Unlike hystrix-go, the abandoned calls still
// running are bounded (Config.MaxAbandoned; past it calls are refused at
// once) and counted (Command.Timeout().Snapshot(), and prompolicy's
// abandoned-calls gauge). Config.Cooperative instead waits for run to
// return, which it must do when its context is done, and leaves no
// goroutine behind.
//
// The package-level functions use DefaultRegistry; a service that wants
// its own set (tests do) makes a Registry.
package command

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/clock"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// hystrix-go's defaults.
const (
	DefaultTimeout                = time.Second
	DefaultMaxConcurrentRequests  = 10
	DefaultRequestVolumeThreshold = 20
	DefaultSleepWindow            = 5 * time.Second
	DefaultErrorPercentThreshold  = 50
)

// Config is a command's configuration, hystrix.CommandConfig's fields
// with durations for hystrix's milliseconds. Zero fields mean the
// defaults above.
type Config struct {
	// Timeout bounds each call.
	Timeout time.Duration
	// MaxConcurrentRequests is how many calls may run at once; one more is
	// refused at once (breakerimpl.ErrRejected) and its fallback runs.
	MaxConcurrentRequests int
	// RequestVolumeThreshold is the calls of the 10-second window before
	// the error percentage counts.
	RequestVolumeThreshold int
	// SleepWindow is how long the breaker stays open before it lets a
	// probe through.
	SleepWindow time.Duration
	// ErrorPercentThreshold is the share of failed calls, in percent, that
	// opens the breaker.
	ErrorPercentThreshold int
	// Cooperative makes a call that runs past its timeout wait for run to
	// return (run must heed its context) instead of answering at the
	// deadline (timeout.Cooperative rather than timeout.Abandon).
	Cooperative bool
	// MaxAbandoned bounds the timed-out calls whose run still runs; past it
	// a call is refused at once (timeout.ErrAbandonedFull, a rejection) and
	// its fallback runs. Zero means timeout.DefaultMaxAbandoned.
	MaxAbandoned int
}

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxConcurrentRequests <= 0 {
		c.MaxConcurrentRequests = DefaultMaxConcurrentRequests
	}
	if c.RequestVolumeThreshold <= 0 {
		c.RequestVolumeThreshold = DefaultRequestVolumeThreshold
	}
	if c.SleepWindow <= 0 {
		c.SleepWindow = DefaultSleepWindow
	}
	if c.ErrorPercentThreshold <= 0 {
		c.ErrorPercentThreshold = DefaultErrorPercentThreshold
	}
	return c
}

// Registry holds named commands. The zero value is empty and ready; it is
// safe for concurrent use.
type Registry struct {
	// Clock is the time source of the commands it makes; nil means
	// clock.Default(). Set it before the first use.
	Clock clock.Clock

	mu       sync.Mutex
	commands map[string]*Command
}

// DefaultRegistry is the registry of the package-level functions.
var DefaultRegistry = &Registry{}

// ConfigureCommand configures the command name in DefaultRegistry, as
// hystrix.ConfigureCommand does.
func ConfigureCommand(name string, c Config) { DefaultRegistry.Configure(name, c) }

// Do runs the command name of DefaultRegistry; see Command.Do.
func Do(ctx context.Context, name string, run func(context.Context) error, fallback func(context.Context, error) error) error {
	return DefaultRegistry.Command(name).Do(ctx, run, fallback)
}

// Go runs the command name of DefaultRegistry asynchronously; see
// Command.Go.
func Go(ctx context.Context, name string, run func(context.Context) error, fallback func(context.Context, error) error) <-chan error {
	return DefaultRegistry.Command(name).Go(ctx, run, fallback)
}

// Configure sets the configuration of the command name, making it if it
// is new. A command already in use keeps its breaker's counts and state
// (the new thresholds apply to them); its new bulkhead and timeout apply
// to calls that start after.
func (r *Registry) Configure(name string, c Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cmd, ok := r.commands[name]; ok {
		cmd.configure(c)
		return
	}
	r.add(name, c)
}

// Command returns the command name, made with the default configuration
// if it was never configured.
func (r *Registry) Command(name string) *Command {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cmd, ok := r.commands[name]; ok {
		return cmd
	}
	return r.add(name, Config{})
}

// Names returns the names of the registry's commands, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.commands))
}

// add makes a command; r.mu is held.
func (r *Registry) add(name string, c Config) *Command {
	clk := r.Clock
	if clk == nil {
		clk = clock.Default()
	}
	cmd := &Command{name: name, clock: clk}
	c = c.withDefaults()
	cmd.breaker = circuitbreaker.New(circuitbreaker.Settings{Name: name, Clock: clk, Rule: rule(c), OpenDuration: c.SleepWindow})
	cmd.install(c)
	if r.commands == nil {
		r.commands = map[string]*Command{}
	}
	r.commands[name] = cmd
	return cmd
}

// rule is hystrix's trip rule: a 10-second window of 10 buckets.
func rule(c Config) circuitbreaker.Rule {
	return circuitbreaker.ErrorRate{Window: 10 * time.Second, Buckets: 10, MinRequests: c.RequestVolumeThreshold, Percent: c.ErrorPercentThreshold}
}

// Command is a named, configured call to a dependency. Get one from a
// Registry; it is safe for concurrent use.
type Command struct {
	name    string
	clock   clock.Clock
	breaker *circuitbreaker.Breaker
	run     atomic.Pointer[runner]
}

// runner is a command's configuration in force, replaced whole.
type runner struct {
	cfg  Config
	pipe breakerimpl.Pipeline[struct{}, struct{}]
}

func (c *Command) install(cfg Config) {
	rn := &runner{cfg: cfg}
	rn.pipe.Breaker = c.breaker
	rn.pipe.Bulkhead = bulkhead.New(bulkhead.Settings{Name: c.name, MaxConcurrent: cfg.MaxConcurrentRequests, Clock: c.clock})
	mode := timeout.Abandon
	if cfg.Cooperative {
		mode = timeout.Cooperative
	}
	rn.pipe.Timeout = timeout.New(timeout.Settings{Name: c.name, Timeout: cfg.Timeout, Clock: c.clock, Mode: mode, MaxAbandoned: cfg.MaxAbandoned})
	c.run.Store(rn)
}

func (c *Command) configure(cfg Config) {
	cfg = cfg.withDefaults()
	c.breaker.Update(func(s *circuitbreaker.Settings) {
		s.Rule, s.OpenDuration = rule(cfg), cfg.SleepWindow
	})
	c.install(cfg)
}

// Name returns the command's name.
func (c *Command) Name() string { return c.name }

// Config returns the configuration in force, defaults filled in.
func (c *Command) Config() Config { return c.run.Load().cfg }

// Breaker returns the command's circuit breaker, for metrics
// (prombreaker) and hot reload (reload.Targets.AddBreaker).
func (c *Command) Breaker() *circuitbreaker.Breaker { return c.breaker }

// Bulkhead returns the command's bulkhead in force, for metrics.
func (c *Command) Bulkhead() *bulkhead.Bulkhead {
	return c.run.Load().pipe.Bulkhead.(*bulkhead.Bulkhead)
}

// Timeout returns the command's timeout in force, for metrics
// (prompolicy.Collector.AddTimeout) and its abandoned calls.
func (c *Command) Timeout() *timeout.Timeout {
	return c.run.Load().pipe.Timeout.(*timeout.Timeout)
}

// Do runs run(ctx) under the command's breaker, bulkhead and timeout, and
// returns its error. When run fails, panics (as a *breakerimpl.PanicError)
// or is refused (breakerimpl.ErrOpen, ErrRejected) and fallback is not nil,
// Do returns what fallback returns, given that error: nil when it handled
// the failure. With no fallback a panic in run goes on.
func (c *Command) Do(ctx context.Context, run func(context.Context) error, fallback func(context.Context, error) error) (err error) {
	if fallback != nil {
		defer func() {
			if r := recover(); r != nil {
				err = fallback(ctx, breakerimpl.NewPanicError(r))
			}
		}()
	}
	rn := c.run.Load()
	_, err = rn.pipe.Execute(ctx, struct{}{}, func(ctx context.Context) (struct{}, error) { return struct{}{}, run(ctx) })
	if err != nil && fallback != nil {
		return fallback(ctx, err)
	}
	return err
}

// Go is Do on a goroutine of its own, as hystrix.Go: the channel receives
// Do's error, if any, and is closed once run (and fallback) have returned,
// so `err := <-errs` is nil on success. A panic with no fallback is sent
// as a *breakerimpl.PanicError rather than crash the program.
func (c *Command) Go(ctx context.Context, run func(context.Context) error, fallback func(context.Context, error) error) <-chan error {
	errs := make(chan error, 1)
	go func() {
		defer close(errs)
		defer func() {
			if r := recover(); r != nil {
				errs <- breakerimpl.NewPanicError(r)
			}
		}()
		if err := c.Do(ctx, run, fallback); err != nil {
			errs <- err
		}
	}()
	return errs
}
