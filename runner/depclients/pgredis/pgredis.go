// Package pgredis registers the PostgreSQL (pgconn) and Redis (go-redis)
// clients of the dependencies the runner starts itself. Import it blank
// where scenarios with `postgres:` or `redis:` dependencies run:
//
//	import _ "github.com/chaoskit/chaoskit/runner/depclients/pgredis"
package pgredis

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/chaoskit/chaoskit/runner/depclients"
)

func init() { depclients.Register(clients{}) }

type clients struct{}

func (clients) PostgresPing(ctx context.Context, dsn string) error {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func (clients) PostgresExec(ctx context.Context, dsn, text string) ([]depclients.Result, error) {
	conn, err := pgconn.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	results, err := conn.Exec(ctx, text).ReadAll()
	out := make([]depclients.Result, 0, len(results))
	for _, r := range results {
		res := depclients.Result{Rows: r.Rows}
		for _, f := range r.FieldDescriptions {
			res.Columns = append(res.Columns, f.Name)
		}
		out = append(out, res)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return out, &depclients.SQLError{Severity: pe.Severity, Message: pe.Message, Detail: pe.Detail, Hint: pe.Hint, Position: pe.Position}
	}
	return out, err
}

func (clients) RedisDo(ctx context.Context, opts depclients.Redis, args []any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: opts.Addr, Password: opts.Password, Dialer: opts.Dial, MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	v, err := c.Do(ctx, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}
