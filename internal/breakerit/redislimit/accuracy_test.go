package redislimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit/redislimit"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

// The accuracy runs: a limit of 500 calls a second, offered four times
// that by one paced caller, measured over 2 s after a warm-up that spends
// the token bucket's burst. Four times, so that a stall of the caller on a
// busy machine (the calls it owes then come back to back, later) still
// leaves each fixed window more calls than it admits.
const (
	configuredRate = 500.0
	offeredRate    = 4 * configuredRate
	warmUp         = 200 * time.Millisecond
	measured       = 2 * time.Second
	window         = 250 * time.Millisecond // the fixed window's, 125 calls each
)

// BenchmarkAccuracy drives each limiter at a known offered rate, on the
// real clock and a real redis-server, and reports what it admitted:
//
//	admitted/configured   calls admitted a second ÷ the configured rate (1 is exact)
//	offered/target        calls offered a second ÷ the offered rate the pacer aimed at
//	ms-to-redis           (recovering) from Redis accepting connections again to the
//	                      limiter's Recovered event
//
// redis-up: Redis answers throughout. redis-down: Redis is killed before
// the run; the limiter decides in memory. recovering: Redis is down for
// the first half of the measured time and started again at its middle.
// Each iteration is one 2.2 s run; use -benchtime Nx. ns/op is the run's
// length and means nothing.
func BenchmarkAccuracy(b *testing.B) {
	r := testserver.StartRedis(b)
	client := redis.NewClient(redislimit.Options(r.Addr()))
	defer client.Close()
	kinds := []struct {
		name string
		make func(s redislimit.Settings) limiter
	}{
		{"token-bucket", func(s redislimit.Settings) limiter {
			return redislimit.NewTokenBucket(client, redislimit.TokenSettings{Rate: configuredRate, Burst: int(configuredRate / 10), Settings: s})
		}},
		{"fixed-window", func(s redislimit.Settings) limiter {
			return redislimit.NewFixedWindow(client, redislimit.WindowSettings{Limit: int(configuredRate * window.Seconds()), Window: window, Settings: s})
		}},
	}
	for _, k := range kinds {
		for _, mode := range []string{"redis-up", "redis-down", "recovering"} {
			b.Run(k.name+"/"+mode, func(b *testing.B) {
				var admitted, offered, toRedis float64
				runs := 0
				for b.Loop() {
					if mode != "redis-up" && r.Running() {
						r.Kill()
					}
					if mode == "redis-up" && !r.Running() {
						r.Start()
					}
					var recovered atomic.Int64
					l := k.make(redislimit.Settings{
						Name: fmt.Sprintf("accuracy-%s-%d", k.name, runs),
						OnEvent: func(e redislimit.Event) {
							if e.Kind == redislimit.Recovered {
								recovered.Store(time.Now().UnixNano())
							}
						},
					})
					started := make(chan time.Time, 1)
					done := make(chan paceResult)
					go func() { done <- pace(l, started) }()
					var restarted time.Time
					if mode == "recovering" {
						// Here, not in the pacer: Start may fail the benchmark,
						// which only its own goroutine may do.
						time.Sleep(time.Until((<-started).Add(measured / 2)))
						r.Start()
						restarted = time.Now()
					}
					res := <-done
					if mode == "recovering" && recovered.Load() == 0 {
						// Not back within the run: wait for it, to say how long.
						for deadline := time.Now().Add(5 * time.Second); recovered.Load() == 0 && time.Now().Before(deadline); {
							time.Sleep(10 * time.Millisecond)
						}
					}
					l.Close()
					admitted += res.admitted / configuredRate
					offered += res.offered / offeredRate
					if mode == "recovering" {
						if rec := recovered.Load(); rec != 0 {
							toRedis += float64(time.Duration(rec - restarted.UnixNano()).Milliseconds())
						} else {
							b.Errorf("run %d: the limiter did not return to Redis", runs)
						}
					}
					runs++
				}
				b.ReportMetric(admitted/float64(runs), "admitted/configured")
				b.ReportMetric(offered/float64(runs), "offered/target")
				if mode == "recovering" {
					b.ReportMetric(toRedis/float64(runs), "ms-to-redis")
				}
			})
		}
	}
}

// paceResult is one run's rates, in calls a second over the measured time.
type paceResult struct{ admitted, offered float64 }

// pace offers calls to l at offeredRate, one caller, for at least warmUp
// and up to the start of a fixed window (so the measured time is whole
// windows and the bucket never rests), then for measured, and counts what
// was admitted in the measured part. It sends the start of the measured
// part on started. A caller that falls behind catches up with calls back
// to back; a call counts in the part of the run it is made in.
func pace(l limiter, started chan<- time.Time) paceResult {
	ctx := context.Background()
	gap := time.Duration(float64(time.Second) / offeredRate)
	call := func() bool {
		d, err := l.Allow(ctx, "k")
		return err == nil && d.Allowed
	}
	warm := time.Now()
	start := warm.Add(warmUp).Truncate(window).Add(window)
	end := start.Add(measured)
	var admitted, offered int
	sent := false
	for i := 0; ; i++ {
		if wait := time.Until(warm.Add(time.Duration(i) * gap)); wait > 0 {
			time.Sleep(wait)
		}
		// A call counts in the part of the run it is made in, whenever
		// it was due.
		at := time.Now()
		if !at.Before(end) {
			break
		}
		in := !at.Before(start)
		if in && !sent {
			started <- start
			sent = true
		}
		ok := call()
		if in {
			offered++
			if ok {
				admitted++
			}
		}
	}
	secs := measured.Seconds()
	return paceResult{admitted: float64(admitted) / secs, offered: float64(offered) / secs}
}
