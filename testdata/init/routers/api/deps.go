// Package api holds the fixture's dependency clients, reached from flags
// and environment variables set in package main.
package api

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Config is where the dependencies are.
type Config struct {
	PostgresURL, RedisURL, Orders, Pricing string
}

// Deps are the clients.
type Deps struct {
	DB      *pgxpool.Pool
	Cache   *redis.Client
	Orders  *grpc.ClientConn
	pricing string
}

// NewDeps connects.
func NewDeps(c Config) *Deps {
	db, _ := pgxpool.New(context.Background(), c.PostgresURL)
	opt, _ := redis.ParseURL(c.RedisURL)
	conn, _ := grpc.NewClient(c.Orders, grpc.WithTransportCredentials(insecure.NewCredentials()))
	return &Deps{DB: db, Cache: redis.NewClient(opt), Orders: conn, pricing: c.Pricing}
}

// Price asks the pricing service.
func (d *Deps) Price(ctx context.Context, sku string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.pricing+"/prices/"+sku, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}
