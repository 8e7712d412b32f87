package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/afex/hystrix-go/hystrix"
	"github.com/failsafe-go/failsafe-go"
	fscb "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/sony/gobreaker/v2"
	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
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
		peerCase{"breakerimpl", serial(breakerimplCall(closedBreakerimpl()), true)},
		peerCase{"gobreaker", serial(gobreakerCall(closedGobreaker()), true)},
		peerCase{"failsafe", serial(failsafeCall(closedFailsafe()), true)},
		peerCase{"gozero", serial(gozeroCall(breaker.NewBreaker(), nil), true)},
		peerCase{"hystrix", serial(hystrixCall(hystrixCommand("success")), true)},
	)
	registerPeers(20, "open",
		peerCase{"breakerimpl", opened(func() func() error { return breakerimplCall(openBreakerimpl()) })},
		peerCase{"gobreaker", opened(func() func() error { return gobreakerCall(openGobreaker()) })},
		peerCase{"failsafe", opened(func() func() error { return failsafeCall(openFailsafe()) })},
		peerCase{"gozero", opened(openGozero)},
		peerCase{"hystrix", opened(openHystrix)},
	)
	registerPeers(30, "parallel",
		peerCase{"breakerimpl", parallel(breakerimplCall(closedBreakerimpl()))},
		peerCase{"gobreaker", parallel(gobreakerCall(closedGobreaker()))},
		peerCase{"failsafe", parallel(failsafeCall(closedFailsafe()))},
		peerCase{"gozero", parallel(gozeroCall(breaker.NewBreaker(), nil))},
		peerCase{"hystrix", parallel(hystrixCall(hystrixCommand("parallel")))},
	)
}

var errDown = errors.New("down")

func succeed(context.Context) (int, error) { return 1, nil }

// serial times call on one goroutine; wantOK says whether it must succeed.
func serial(call func() error, wantOK bool) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := call(); (err == nil) != wantOK {
				b.Fatalf("call returned %v", err)
			}
		}
	}
}

// opened builds an open breaker's call (untimed), then times rejections.
func opened(setup func() func() error) func(*testing.B) {
	return func(b *testing.B) {
		serial(setup(), false)(b)
	}
}

func parallel(call func() error) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
}

// breakerimpl

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

func breakerimplCall(cb *circuitbreaker.Breaker) func() error {
	ctx := context.Background()
	return func() error {
		_, err := circuitbreaker.Execute(ctx, cb, succeed)
		return err
	}
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

func gobreakerCall(cb *gobreaker.CircuitBreaker[int]) func() error {
	fn := func() (int, error) { return 1, nil }
	return func() error {
		_, err := cb.Execute(fn)
		return err
	}
}

// failsafe-go

func closedFailsafe() fscb.CircuitBreaker[any] { return fscb.NewWithDefaults[any]() }

func openFailsafe() fscb.CircuitBreaker[any] {
	cb := fscb.NewBuilder[any]().WithDelay(1 << 40).Build()
	cb.Open()
	return cb
}

func failsafeCall(cb fscb.CircuitBreaker[any]) func() error {
	exec := failsafe.With[any](cb)
	fn := func() error { return nil }
	return func() error { return exec.Run(fn) }
}

// go-zero core/breaker

func gozeroCall(br breaker.Breaker, err error) func() error {
	fn := func() error { return err }
	return func() error { return br.Do(fn) }
}

func openGozero() func() error {
	br := breaker.NewBreaker()
	for range 10_000 {
		br.Do(func() error { return errDown })
	}
	call := gozeroCall(br, errDown)
	return func() error {
		if err := call(); !errors.Is(err, breaker.ErrServiceUnavailable) && !errors.Is(err, errDown) {
			return nil // neither rejected nor run: let serial fail
		}
		return errDown
	}
}

// afex/hystrix-go

func hystrixCommand(name string) string {
	// Its tickets come back on other goroutines, late under load: a high
	// limit keeps the parallel run from tripping over its own bulkhead.
	hystrix.ConfigureCommand(name, hystrix.CommandConfig{Timeout: 10_000, MaxConcurrentRequests: 100_000})
	return name
}

func hystrixCall(name string) func() error {
	fn := func() error { return nil }
	return func() error { return hystrix.Do(name, fn, nil) }
}

func openHystrix() func() error {
	name := hystrixCommand("open")
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
	return hystrixCall(name)
}

// BenchmarkPipelineBreakerCache is the success path of a read protected by
// breakerimpl's error-rate breaker and a last-known-good cache: the
// breaker admits, the call succeeds, and the cache overwrites the key's
// entry with the fresh value.
func BenchmarkPipelineBreakerCache(b *testing.B) {
	type row struct {
		ID   int
		Name string
	}
	p := breakerimpl.Pipeline[string, row]{
		Breaker:  circuitbreaker.New(circuitbreaker.Settings{Rule: circuitbreaker.ErrorRate{}}),
		Fallback: fallback.NewCache[string, row](fallback.CacheSettings{}),
	}
	ctx := context.Background()
	read := func(context.Context) (row, error) { return row{ID: 1, Name: "one"}, nil }
	b.ReportAllocs()
	for range b.N {
		if _, err := p.Execute(ctx, "row/1", read); err != nil {
			b.Fatal(err)
		}
	}
}
