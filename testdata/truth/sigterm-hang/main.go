// Command sigterm-hang answers each read after 200ms of work and, on
// SIGTERM, stops accepting, finishes the requests in flight and exits, as
// http.Server.Shutdown does. Variant ignore-term ignores SIGTERM (it must
// be killed after its grace); variant no-drain exits at once on SIGTERM,
// cutting the requests it was serving.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	variant := flag.String("variant", "correct", "correct, ignore-term or no-drain")
	flag.Parse()
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		io.WriteString(w, `{"id":"`+r.PathValue("id")+`"}`)
	})
	srv := &http.Server{Addr: *listen}
	if *variant == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			<-term
			if *variant == "no-drain" {
				os.Exit(0)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
			close(done)
		}()
		defer func() { <-done }()
	}
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
