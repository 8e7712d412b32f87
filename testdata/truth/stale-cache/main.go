// Command stale-cache reads items from its upstream and keeps the last copy
// of each, with when it was read. When the upstream fails it serves a copy
// up to 1s old, with its age in X-Cache-Age (milliseconds), and refuses
// with 503 after that. The broken variant serves a copy of any age; the
// bad-age one states an age that is none ("soon"). Two variants misreport
// themselves: young behaves correctly and states every copy as fresh (0);
// lying serves a copy of any age, as broken does, and states at most
// 900 ms, under the bound, so that only chaoskit's own clock of the outage
// shows the copies' real age.
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"strconv"
	"sync"
	"time"
)

type entry struct {
	body []byte
	at   time.Time
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct, broken, bad-age, young or lying")
	flag.Parse()
	const maxAge = time.Second
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var cache sync.Map
	http.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		resp, err := client.Get("http://" + *upstream + "/item/" + id)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				cache.Store(id, entry{body, time.Now()})
				w.Header().Set("X-Chaoskit-Source", "primary")
				w.Write(body)
				return
			}
		}
		v, ok := cache.Load(id)
		if !ok {
			http.Error(w, "upstream failed", http.StatusServiceUnavailable)
			return
		}
		e := v.(entry)
		age := time.Since(e.at)
		if age > maxAge && *variant != "broken" && *variant != "lying" {
			http.Error(w, "upstream failed and the copy is too old", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-Chaoskit-Source", "cache")
		stated := strconv.FormatInt(age.Milliseconds(), 10)
		switch *variant {
		case "bad-age":
			stated = "soon"
		case "young":
			stated = "0"
		case "lying":
			stated = strconv.FormatInt(min(age, 900*time.Millisecond).Milliseconds(), 10)
		}
		w.Header().Set("X-Chaoskit-Age", stated)
		w.Write(e.body)
	})
	log.Fatal(http.ListenAndServe(*listen, nil))
}
