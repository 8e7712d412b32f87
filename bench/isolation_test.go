package bench

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	fsadaptivelimiter "github.com/failsafe-go/failsafe-go/adaptivelimiter"
	fsbulkhead "github.com/failsafe-go/failsafe-go/bulkhead"
	fscircuitbreaker "github.com/failsafe-go/failsafe-go/circuitbreaker"
	fsfallback "github.com/failsafe-go/failsafe-go/fallback"
	fstimeout "github.com/failsafe-go/failsafe-go/timeout"
	"github.com/zeromicro/go-zero/core/load"
	"github.com/zeromicro/go-zero/core/logx"
	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/bulkhead"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/fallback"
	"github.com/chaoskit/chaoskit/breakerimpl/ratelimit"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/breakerimpl/timeout"
)

// The isolation groups: an admitted call through a load shedder, a rate
// limiter and a bulkhead, each far from its limit, taken and settled with
// the library's two-step API; and the pipeline group, a call through four
// policies composed (fallback, breaker, bulkhead, timeout).
func init() {
	// go-zero's stat package logs the CPU usage to stdout every minute,
	// in the middle of the benchmark lines.
	logx.DisableStat()
	load.DisableLog()
	registerPeers(40, "shedder",
		peerCase{"breakerimpl", benchShedder},
		peerCase{"gozero", benchGoZeroShedder},
	)
	registerPeers(50, "ratelimit",
		peerCase{"breakerimpl", benchTokenBucket},
		peerCase{"xtimerate", benchRateLimiter},
	)
	registerPeers(60, "bulkhead",
		peerCase{"breakerimpl", benchBulkhead},
		peerCase{"failsafe", benchFailsafeBulkhead},
	)
	registerPeers(65, "adaptive-limiter",
		peerCase{"breakerimpl", benchAdaptiveLimiter},
		peerCase{"failsafe", benchFailsafeAdaptiveLimiter},
	)
	registerPeers(70, "pipeline",
		peerCase{"breakerimpl", benchPipeline(true)},
		peerCase{"breakerimpl-background-ctx", benchPipeline(false)},
		peerCase{"failsafe", benchFailsafePipeline},
	)
}

// lowCPU is a CPU meter below any threshold, so the shedder admits; the
// go-zero shedder reads this machine's CPU, which an idle benchmark keeps
// below its 90 %.
type lowCPU struct{}

func (lowCPU) Usage() float64 { return 0.1 }

func benchShedder(b *testing.B) {
	s := shed.New(shed.Settings{CPU: lowCPU{}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.Allow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Done(nil)
	}
}

func benchGoZeroShedder(b *testing.B) {
	s := load.NewAdaptiveShedder()
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Pass()
	}
}

func benchTokenBucket(b *testing.B) {
	lim := ratelimit.NewTokenBucket(ratelimit.TokenSettings{Rate: 1e12, Burst: 1 << 30})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := lim.Allow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Done(nil)
	}
}

func benchRateLimiter(b *testing.B) {
	lim := rate.NewLimiter(1e12, 1<<30)
	b.ReportAllocs()
	for b.Loop() {
		if !lim.Allow() {
			b.Fatal("refused")
		}
	}
}

func benchBulkhead(b *testing.B) {
	bh := bulkhead.New(bulkhead.Settings{MaxConcurrent: 1 << 20})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := bh.Allow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Done(nil)
	}
}

func benchFailsafeBulkhead(b *testing.B) {
	bh := fsbulkhead.New[any](1 << 20)
	b.ReportAllocs()
	for b.Loop() {
		if !bh.TryAcquirePermit() {
			b.Fatal("refused")
		}
		bh.ReleasePermit()
	}
}

// benchAdaptiveLimiter is a call admitted and settled by a latency-driven
// concurrency limiter far from its limit: breakerimpl's ratelimit.Adaptive
// and failsafe-go's adaptivelimiter (TryAcquirePermit, Record), each with
// its defaults and a limit no single caller reaches.
func benchAdaptiveLimiter(b *testing.B) {
	l := ratelimit.NewAdaptive(ratelimit.AdaptiveSettings{InitialLimit: 1000})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := l.Allow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Done(nil)
	}
}

func benchFailsafeAdaptiveLimiter(b *testing.B) {
	l := fsadaptivelimiter.NewBuilder[any]().WithLimits(1, 1000, 1000).Build()
	b.ReportAllocs()
	for b.Loop() {
		p, ok := l.TryAcquirePermit()
		if !ok {
			b.Fatal("refused")
		}
		p.Record()
	}
}

type item struct {
	ID   int
	Name string
}

func readItem(context.Context) (item, error) { return item{ID: 1, Name: "one"}, nil }

// benchPipeline is the success path of a call under a last-known-good
// fallback, an error-rate breaker, a bulkhead and a timeout (one second, so
// it never fires), with a parent context the caller can cancel, as an HTTP
// request's is, or with context.Background(), which lets calls share their
// timeout context.
func benchPipeline(cancellable bool) func(b *testing.B) {
	return func(b *testing.B) {
		ctx := context.Background()
		if cancellable {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
		}
		p := breakerimpl.Pipeline[string, item]{
			Fallback: fallback.NewCache[string, item](fallback.CacheSettings{}),
			Breaker:  circuitbreaker.New(circuitbreaker.Settings{}),
			Bulkhead: bulkhead.New(bulkhead.Settings{MaxConcurrent: 1 << 20}),
			Timeout:  timeout.New(timeout.Settings{Timeout: time.Second}),
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Execute(ctx, "item/1", readItem); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchFailsafePipeline is benchPipeline's work through failsafe-go's
// executor with the same four policies.
func benchFailsafePipeline(b *testing.B) {
	exec := failsafe.With[item](
		fsfallback.NewWithResult(item{}),
		fscircuitbreaker.NewWithDefaults[item](),
		fsbulkhead.New[item](1<<20),
		fstimeout.New[item](time.Second),
	)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := exec.Get(func() (item, error) { return readItem(context.Background()) }); err != nil {
			b.Fatal(err)
		}
	}
}
