// Command async-consumer takes clicks (POST /click, answered 202 once the
// click is on a Redis stream) and a consumer in the same process writes
// them into Postgres. Writing takes a while (300ms a batch), as a real
// consumer's does under load.
//
// correct: a batch is acknowledged on the stream after its rows are
// written, and a restarted consumer first takes again what it read and
// never acknowledged, so a kill loses nothing.
// ack-first: a batch is acknowledged as soon as it is read, and written
// after: a kill loses what was acknowledged and not yet written.
package main

import (
	"context"
	"database/sql"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql
	"github.com/redis/go-redis/v9"
)

const (
	stream = "clicks"
	group  = "writers"
	me     = "writer-1"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	dsn := flag.String("dsn", "", "PostgreSQL connection string")
	redisAddr := flag.String("redis", "", "Redis address")
	variant := flag.String("variant", "correct", "correct or ack-first")
	flag.Parse()
	db, err := sql.Open("pgx", *dsn)
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: *redisAddr, Password: os.Getenv("REDIS_PASSWORD")})
	ctx := context.Background()
	if err := rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err(); err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
		log.Fatal(err)
	}
	go consume(ctx, db, rdb, *variant == "ack-first")
	http.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	http.HandleFunc("POST /click", func(w http.ResponseWriter, r *http.Request) {
		if err := rdb.XAdd(r.Context(), &redis.XAddArgs{Stream: stream, Values: []string{"at", time.Now().String()}}).Err(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}

// consume writes the stream's entries into the clicks table, batch by
// batch, each batch in a goroutine of its own (300ms to write it).
func consume(ctx context.Context, db *sql.DB, rdb *redis.Client, ackFirst bool) {
	// "0" is what this consumer read before and never acknowledged (a
	// restart takes it again); ">" is what nobody read yet.
	from := "0"
	for {
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: me, Streams: []string{stream, from}, Count: 500, Block: 20 * time.Millisecond}).Result()
		if err != nil && err != redis.Nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var ids []string
		for _, s := range res {
			for _, m := range s.Messages {
				ids = append(ids, m.ID)
			}
		}
		if len(ids) == 0 {
			from = ">"
			continue
		}
		if from == "0" {
			from = ">" // the backlog is taken once
		}
		if ackFirst {
			rdb.XAck(ctx, stream, group, ids...)
		}
		go func() {
			time.Sleep(300 * time.Millisecond)
			for _, id := range ids {
				if _, err := db.ExecContext(ctx, `INSERT INTO clicks (id) VALUES ($1) ON CONFLICT DO NOTHING`, id); err != nil {
					log.Printf("insert %s: %v", id, err)
					return // left unacknowledged: taken again after a restart
				}
			}
			if !ackFirst {
				rdb.XAck(ctx, stream, group, ids...)
			}
		}()
	}
}
