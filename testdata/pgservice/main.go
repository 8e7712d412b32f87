// Command pgservice is the smallest service chaoskit's documentation
// onboards: one endpoint, GET /visits, that reads a count from PostgreSQL through pgx,
// with no failpoint markers and no context passed to its data layer. The
// end-to-end test puts 300ms of latency on its Postgres connection with a
// scenario from docs/scenarios.md and no change to this code.
package main

import (
	"database/sql"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx driver for database/sql
)

// visits is the data layer: plain calls, no context.
type visits struct{ db *sql.DB }

func (v visits) count() (int, error) {
	var n int
	err := v.db.QueryRow(`SELECT count(*) FROM visits`).Scan(&n)
	return n, err
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (default $DATABASE_URL)")
	flag.Parse()
	db, err := sql.Open("pgx", *dsn)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS visits (id bigserial PRIMARY KEY)`); err != nil {
		log.Fatalf("create table: %v", err)
	}
	v := visits{db}
	http.HandleFunc("GET /visits", func(w http.ResponseWriter, _ *http.Request) {
		n, err := v.count()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"visits": n})
	})
	log.Printf("listening on %s", *listen)
	log.Fatal(http.ListenAndServe(*listen, nil))
}
