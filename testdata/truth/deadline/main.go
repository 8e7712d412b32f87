// Command deadline reads items from its upstream with a deadline (--timeout,
// 100ms by default) and answers 504 when the upstream takes longer. The
// broken variant has no deadline: it waits for the upstream however slow
// it is. The late variant misreports itself: it waits for the upstream as
// the broken one does, then answers 504 "deadline exceeded" when the call
// took longer than its deadline, a deadline checked after the fact; by its
// statuses it times out as the correct service does.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	timeout := flag.Duration("timeout", 100*time.Millisecond, "deadline of an upstream call")
	variant := flag.String("variant", "correct", "correct, broken or late")
	flag.Parse()
	client := &http.Client{Timeout: *timeout}
	if *variant != "correct" {
		client.Timeout = 0
	}
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		resp, err := client.Get("http://" + *upstream + "/item/" + r.PathValue("id"))
		if err != nil {
			http.Error(w, "upstream too slow", http.StatusGatewayTimeout)
			return
		}
		defer resp.Body.Close()
		if *variant == "late" && time.Since(start) > *timeout {
			io.Copy(io.Discard, resp.Body)
			http.Error(w, "deadline exceeded", http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
