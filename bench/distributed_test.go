package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker/redisbreaker"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

// The distributed group: a call that succeeds through a breaker whose
// state the instances of a service share in one Redis (a real
// redis-server on loopback, started per case): breakerimpl's redisbreaker
// (shared open state, read in the background) and gobreaker v2's
// DistributedCircuitBreaker (its whole state read and written under a
// lock in Redis on every call), with a store on go-redis.
func init() {
	registerPeers(80, "distributed",
		peerCase{"breakerimpl", benchRedisBreaker},
		peerCase{"gobreaker", benchGobreakerDistributed},
	)
}

func benchRedisBreaker(b *testing.B) {
	srv := testserver.StartRedis(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	cb := redisbreaker.New(redisbreaker.Settings{Breaker: circuitbreaker.Settings{Name: "bench"}, Client: client})
	defer cb.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := cb.Allow(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Done(nil)
	}
}

func benchGobreakerDistributed(b *testing.B) {
	srv := testserver.StartRedis(b)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	cb, err := gobreaker.NewDistributedCircuitBreaker[int](redisStore{client}, gobreaker.Settings{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cb.Execute(func() (int, error) { return 1, nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// redisStore is gobreaker's SharedDataStore on go-redis: a lock by SET NX
// with an expiry, the state as a string.
type redisStore struct{ c *redis.Client }

func (s redisStore) Lock(name string) error {
	ctx := context.Background()
	for {
		ok, err := s.c.SetNX(ctx, name, "1", time.Second).Result()
		if err != nil || ok {
			return err
		}
	}
}

func (s redisStore) Unlock(name string) error { return s.c.Del(context.Background(), name).Err() }

func (s redisStore) GetData(name string) ([]byte, error) {
	b, err := s.c.Get(context.Background(), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

func (s redisStore) SetData(name string, data []byte) error {
	return s.c.Set(context.Background(), name, data, 0).Err()
}
