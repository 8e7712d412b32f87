// Package depclients holds the clients the runner speaks to the dependencies
// it starts itself (a scenario's `postgres:` and `redis:` dependencies) with:
// their readiness check and their setup steps. The runner reaches them
// through this registry so that a program importing the runner (chaostest,
// a test's own harness) does not link a PostgreSQL or Redis driver unless
// it opts in with a blank import of package depclients/pgredis, as chaoskit's
// CLI does:
//
//	import _ "github.com/chaoskit/chaoskit/runner/depclients/pgredis"
//
// A run that needs them without it fails before it starts anything, saying
// which import is missing.
package depclients

import (
	"context"
	"net"
	"sync"
)

// Import is the package whose blank import registers the clients.
const Import = "github.com/chaoskit/chaoskit/runner/depclients/pgredis"

// Clients speaks to the managed dependencies.
type Clients interface {
	// PostgresPing connects to the server at dsn and closes the
	// connection: nil once it accepts connections.
	PostgresPing(ctx context.Context, dsn string) error
	// PostgresExec runs text (several statements) in one simple-protocol
	// exchange, as psql -f does, and returns each statement's result,
	// those that completed before an error too. A statement the server
	// refused gives a *SQLError.
	PostgresExec(ctx context.Context, dsn, text string) ([]Result, error)
	// RedisDo sends one command and returns its reply (nil for a nil
	// reply: no error).
	RedisDo(ctx context.Context, opts Redis, args []any) (any, error)
}

// Result is one statement's result: its columns and its rows, a nil
// value for SQL NULL.
type Result struct {
	Columns []string
	Rows    [][][]byte
}

// SQLError is a statement the server refused, with its position in the
// text (1-based, in characters) when it gave one.
type SQLError struct {
	Severity, Message, Detail, Hint string
	Position                        int32
}

func (e *SQLError) Error() string { return e.Severity + ": " + e.Message }

// Redis says how to reach a Redis server.
type Redis struct {
	Addr     string
	Password string
	// Dial makes every connection (the runner's refuses anything but
	// loopback).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

var (
	mu      sync.RWMutex
	clients Clients
)

// Register makes c the clients of the managed dependencies; package
// pgredis calls it from its init.
func Register(c Clients) {
	mu.Lock()
	defer mu.Unlock()
	clients = c
}

// Get returns the registered clients, or nil when no package registered
// any.
func Get() Clients {
	mu.RLock()
	defer mu.RUnlock()
	return clients
}
