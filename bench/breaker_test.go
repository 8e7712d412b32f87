package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afex/hystrix-go/hystrix"
	"github.com/failsafe-go/failsafe-go"
	fscb "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"
	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
)

// The circuit breaker groups: the protected function returns at once, and
// each library is set up with its defaults except where a group needs the
// breaker open. breakerimpl uses its rolling-window error-rate rule, the
// costliest of its rules. Each library's breaker (and failsafe's executor)
// is built once, outside the timed loop.
//
//	success   one goroutine, calls that succeed
//	open      one goroutine, calls rejected by an open breaker (go-zero has
//	          no open state: its throttle rejects nearly every call of a
//	          backend that only fails, letting one through per second)
//	parallel  RunParallel over GOMAXPROCS goroutines, calls that succeed
func init() {
	logx.Disable() // go-zero logs every rejection
	registerPeers(10, "success",
		peerCase{"breakerimpl", func(b *testing.B) { breakerimplLoop(b, closedBreakerimpl(), true) }},
		peerCase{"gobreaker", func(b *testing.B) { gobreakerLoop(b, closedGobreaker(), true) }},
		peerCase{"failsafe", func(b *testing.B) { failsafeLoop(b, closedFailsafe(), true) }},
		peerCase{"gozero", func(b *testing.B) { gozeroLoop(b, breaker.NewBreaker(), nil) }},
		peerCase{"hystrix", func(b *testing.B) { hystrixLoop(b, hystrixCommand("success"), true) }},
	)
	registerPeers(20, "open",
		peerCase{"breakerimpl", func(b *testing.B) { breakerimplLoop(b, openBreakerimpl(), false) }},
		peerCase{"gobreaker", func(b *testing.B) { gobreakerLoop(b, openGobreaker(), false) }},
		peerCase{"failsafe", func(b *testing.B) { failsafeLoop(b, openFailsafe(), false) }},
		peerCase{"gozero", func(b *testing.B) { gozeroLoop(b, openGozero(), errDown) }},
		peerCase{"hystrix", func(b *testing.B) { hystrixLoop(b, openHystrix(), false) }},
	)
	registerPeers(30, "parallel",
		peerCase{"breakerimpl", breakerimplParallel},
		peerCase{"gobreaker", gobreakerParallel},
		peerCase{"failsafe", failsafeParallel},
		peerCase{"gozero", gozeroParallel},
		peerCase{"hystrix", hystrixParallel},
	)
}

var errDown = errors.New("down")

// Each library has its own loop, written out, so that no library pays for
// an extra indirect call per operation. wantOK says whether calls must
// succeed (success) or be rejected (open).

func check(b *testing.B, err error, wantOK bool) {
	if (err == nil) != wantOK {
		b.Fatalf("call returned %v", err)
	}
}

// breakerimpl

func succeed(context.Context) (int, error) { return 1, nil }

func closedBreakerimpl() *circuitbreaker.Breaker {
	return circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{}})
}

func openBreakerimpl() *circuitbreaker.Breaker {
	cb := circuitbreaker.New(circuitbreaker.Settings{
		Rule: circuitbreaker.ErrorRate{MinRequests: 1, Percent: 1}, OpenDuration: 1 << 40,
	})
	circuitbreaker.Execute(context.Background(), cb, func(context.Context) (int, error) { return 0, errDown })
	if cb.State() != circuitbreaker.Open {
		panic("breakerimpl did not open")
	}
	return cb
}

func breakerimplLoop(b *testing.B, cb *circuitbreaker.Breaker, wantOK bool) {
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		_, err := circuitbreaker.Execute(ctx, cb, succeed)
		check(b, err, wantOK)
	}
}

func breakerimplParallel(b *testing.B) {
	cb := closedBreakerimpl()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := circuitbreaker.Execute(ctx, cb, succeed); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// sony/gobreaker v2

func closedGobreaker() *gobreaker.CircuitBreaker[int] {
	return gobreaker.NewCircuitBreaker[int](gobreaker.Settings{Name: "bench"})
}

func openGobreaker() *gobreaker.CircuitBreaker[int] {
	cb := gobreaker.NewCircuitBreaker[int](gobreaker.Settings{
		Name: "bench", Timeout: 1 << 40,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 1 },
	})
	cb.Execute(func() (int, error) { return 0, errDown })
	if cb.State() != gobreaker.StateOpen {
		panic("gobreaker did not open")
	}
	return cb
}

func gobreakerSucceed() (int, error) { return 1, nil }

func gobreakerLoop(b *testing.B, cb *gobreaker.CircuitBreaker[int], wantOK bool) {
	b.ReportAllocs()
	for range b.N {
		_, err := cb.Execute(gobreakerSucceed)
		check(b, err, wantOK)
	}
}

func gobreakerParallel(b *testing.B) {
	cb := closedGobreaker()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cb.Execute(gobreakerSucceed); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// failsafe-go

func closedFailsafe() fscb.CircuitBreaker[any] { return fscb.NewWithDefaults[any]() }

func openFailsafe() fscb.CircuitBreaker[any] {
	cb := fscb.NewBuilder[any]().WithDelay(1 << 40).Build()
	cb.Open()
	return cb
}

func nothing() error { return nil }

func failsafeLoop(b *testing.B, cb fscb.CircuitBreaker[any], wantOK bool) {
	exec := failsafe.With[any](cb)
	b.ReportAllocs()
	for range b.N {
		check(b, exec.Run(nothing), wantOK)
	}
}

func failsafeParallel(b *testing.B) {
	exec := failsafe.With[any](closedFailsafe())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := exec.Run(nothing); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// go-zero core/breaker

func openGozero() breaker.Breaker {
	br := breaker.NewBreaker()
	for range 10_000 {
		br.Do(func() error { return errDown })
	}
	return br
}

// gozeroLoop runs calls that return result: nil for the success group;
// errDown for the open one, where go-zero's throttle rejects nearly every
// call and lets one through per second, which fails again.
func gozeroLoop(b *testing.B, br breaker.Breaker, result error) {
	fn := func() error { return result }
	b.ReportAllocs()
	for range b.N {
		err := br.Do(fn)
		if result == nil {
			check(b, err, true)
		} else if !errors.Is(err, breaker.ErrServiceUnavailable) && !errors.Is(err, errDown) {
			b.Fatal(err)
		}
	}
}

func gozeroParallel(b *testing.B) {
	br := breaker.NewBreaker()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := br.Do(nothing); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// afex/hystrix-go

func hystrixCommand(name string) string {
	// Its tickets come back on other goroutines, late under load: a high
	// limit keeps the parallel run from tripping over its own bulkhead.
	hystrix.ConfigureCommand(name, hystrix.CommandConfig{Timeout: 10_000, MaxConcurrentRequests: 100_000})
	return name
}

func openHystrix() string {
	name := "open"
	hystrix.ConfigureCommand(name, hystrix.CommandConfig{
		Timeout: 10_000, MaxConcurrentRequests: 100_000, RequestVolumeThreshold: 1, SleepWindow: 1 << 30,
	})
	cb, _, _ := hystrix.GetCircuit(name)
	for i := 0; !cb.IsOpen(); i++ {
		if i > 5000 {
			panic("hystrix did not open")
		}
		hystrix.Do(name, func() error { return errDown }, nil)
		time.Sleep(time.Millisecond) // its metrics are updated by another goroutine
	}
	return name
}

func hystrixLoop(b *testing.B, name string, wantOK bool) {
	b.ReportAllocs()
	for range b.N {
		check(b, hystrix.Do(name, nothing, nil), wantOK)
	}
}

func hystrixParallel(b *testing.B) {
	name := hystrixCommand("parallel")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := hystrix.Do(name, nothing, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkBaselineIndependent measures the machine rather than a library:
// each goroutine adds to its own padded counter and calls an empty
// function, so nothing is shared. On a machine with two idle cores the
// parallel figure is half the serial one; when it is not, no parallel
// figure here can be, whatever the library.
func BenchmarkBaselineIndependent(b *testing.B) {
	type padded struct {
		n atomic.Uint64
		_ [120]byte
	}
	var counters [64]padded
	var next atomic.Int32
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			counters[0].n.Add(1)
			_ = nothing()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			c := &counters[next.Add(1)%64].n
			for pb.Next() {
				c.Add(1)
				_ = nothing()
			}
		})
	})
}
