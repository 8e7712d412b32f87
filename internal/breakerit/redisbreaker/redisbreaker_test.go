package redisbreaker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker/redisbreaker"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errDown = errors.New("down")

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
	}
}

func fail(b *redisbreaker.Breaker) {
	p, err := b.Allow(context.Background())
	if err == nil {
		p.Done(errDown)
	}
}

func refused(b *redisbreaker.Breaker) bool {
	p, err := b.Allow(context.Background())
	if err == nil {
		p.Done(nil)
	}
	return errors.Is(err, breakerimpl.ErrOpen)
}

// Two instances on one real Redis: one trips, the other refuses too
// (though its own breaker saw nothing) until the open duration ends. With
// Redis killed each instance goes on with its own breaker.
func TestFleetSharesOpenState(t *testing.T) {
	srv := testserver.StartRedis(t)
	newInstance := func() *redisbreaker.Breaker {
		client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { client.Close() })
		b := redisbreaker.New(redisbreaker.Settings{
			Breaker: circuitbreaker.Settings{Name: "db", Rule: circuitbreaker.ConsecutiveFailures{Threshold: 2}, OpenDuration: 400 * time.Millisecond},
			Client:  client, Sync: 10 * time.Millisecond,
		})
		t.Cleanup(b.Close)
		return b
	}
	a, b := newInstance(), newInstance()
	if refused(b) {
		t.Fatal("b refuses before anything failed")
	}
	fail(a)
	fail(a)
	if a.Local().State() != circuitbreaker.Open {
		t.Fatalf("a after two failures: %v", a.Local().State())
	}
	eventually(t, "b refuses once a tripped", func() bool { return refused(b) })
	if s := b.Snapshot(); s.Local.State != circuitbreaker.Closed || !s.FleetOpen || s.FleetRefused == 0 || !s.Redis {
		t.Fatalf("b: %+v; want its own breaker closed and the fleet open", s)
	}
	eventually(t, "b admits once the open duration ended", func() bool { return !refused(b) })

	srv.Kill()
	eventually(t, "the instances notice Redis is gone", func() bool { return !a.Snapshot().Redis && !b.Snapshot().Redis })
	time.Sleep(400 * time.Millisecond) // a's own open duration
	fail(b)
	fail(b)
	if b.Local().State() != circuitbreaker.Open || !refused(b) {
		t.Fatalf("b without Redis: %v; want its own breaker to trip", b.Local().State())
	}
	if refused(a) {
		t.Fatal("a refuses on b's trip though Redis is gone")
	}
}
