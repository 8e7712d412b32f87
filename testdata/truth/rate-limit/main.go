// Command rate-limit admits 50 requests a second (a token bucket, burst
// 10) and refuses the rest with 429. Variants: "none" admits everything,
// "strict" admits 10 a second, "hold" holds the requests over the limit for
// 2 s (past the client's timeout) instead of refusing them.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct, none, strict or hold")
	flag.Parse()
	limit := rate.Limit(50)
	switch *variant {
	case "none":
		limit = rate.Inf
	case "strict":
		limit = 10
	}
	limiter := rate.NewLimiter(limit, 10)
	http.HandleFunc("GET /healthz", func(http.ResponseWriter, *http.Request) {})
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !limiter.Allow() {
			if *variant == "hold" {
				time.Sleep(2 * time.Second)
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, "{\"id\":%q}\n", r.PathValue("id"))
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
