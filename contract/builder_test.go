package contract

import (
	"fmt"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// shop builds the hand-made timeline most evaluator tests judge: a warmup,
// a fault phase with the DB fault on, and a recovery, each 1s long with 100
// requests 10ms apart. serve decides what each request got back; by
// default the DB serves in warmup and recovery and the cache in the fault.
type shop struct {
	tl  *timeline.Timeline
	seq uint64
}

const dbFault = "shop/store/productQuery"

// served fills r with a response from source in lat, with body b.
func served(r *timeline.Request, status int, source string, lat time.Duration) {
	r.Status, r.Latency = status, lat
	r.Headers = map[string]string{"X-Served-From": source, "Content-Type": "application/json"}
	r.Body, r.BodySize = "", 0
	if status/100 == 2 {
		r.Body = fmt.Sprintf(`{"id":%d,"name":"p%d"}`, r.Seq%10, r.Seq%10)
		r.BodySize = len(r.Body)
	}
	if source != "db" && source != "none" && status == 200 {
		r.Headers["X-Copy-Age"] = "1500"
	}
}

// normal is the correct service: DB outside the fault, cache in it.
func normal(phase string, _ int, r *timeline.Request) {
	if phase == "fault" {
		served(r, 200, "cache", 2*time.Millisecond)
		return
	}
	served(r, 200, "db", time.Millisecond)
}

func newShop(hits int64, serve func(phase string, i int, r *timeline.Request)) *shop {
	s := &shop{tl: &timeline.Timeline{Meta: timeline.Meta{Scenario: "shop", Start: t0}}}
	for k, name := range []string{"warmup", "fault", "recovery"} {
		start := t0.Add(time.Duration(k) * time.Second)
		s.event(timeline.Event{Time: start, Kind: timeline.PhaseStart, Phase: name, Planned: time.Second})
		if name == "fault" {
			s.event(timeline.Event{Time: start, Kind: timeline.FaultOn, Phase: name, Point: dbFault, Term: "return(true)", Ack: time.Millisecond})
		}
		for i := 0; i < 100; i++ {
			s.seq++
			r := timeline.Request{Seq: s.seq, Phase: name, Time: start.Add(time.Duration(i) * 10 * time.Millisecond), Method: "GET",
				Target: fmt.Sprintf("GET /products/%d", s.seq%10)}
			r.URL = "http://127.0.0.1:1" + r.Target[4:]
			serve(name, i, &r)
			s.tl.Requests = append(s.tl.Requests, r)
		}
		end := start.Add(time.Second)
		s.event(timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: name})
		if name == "fault" {
			h := hits
			s.event(timeline.Event{Time: end, Kind: timeline.FaultOff, Phase: name, Point: dbFault})
			s.event(timeline.Event{Time: end, Kind: timeline.FaultHits, Phase: name, Point: dbFault, Hits: &h})
		}
	}
	s.tl.Complete = true
	return s
}

func (s *shop) event(e timeline.Event) *shop {
	s.tl.Events = append(s.tl.Events, e)
	return s
}

// breaker adds state samples of breaker db every 100ms, with state(at).
func (s *shop) breaker(state func(at time.Duration) string) *shop {
	for at := time.Duration(0); at <= 3*time.Second; at += 100 * time.Millisecond {
		s.event(timeline.Event{Time: t0.Add(at), Kind: timeline.State,
			Data: map[string]any{"breakers": map[string]any{"db": map[string]any{"state": state(at)}}}})
	}
	return s
}

// breakerOpen is a breaker that is open from opens until closes.
func breakerOpen(opens, closes time.Duration) func(time.Duration) string {
	return func(at time.Duration) string {
		if at >= opens && at < closes {
			return "open"
		}
		return "closed"
	}
}

// readBack records the read-back of every 2xx request matching keep, with
// read deciding its result, and the read_back_done event.
func (s *shop) readBack(keep func(r *timeline.Request) bool, read func(r *timeline.Request, rd *timeline.ReadBackResult)) *shop {
	end := t0.Add(3 * time.Second)
	for i := range s.tl.Requests {
		r := &s.tl.Requests[i]
		if r.Status/100 != 2 || !keep(r) {
			continue
		}
		rd := &timeline.ReadBackResult{Write: r.Seq, Target: "GET /orders/" + fmt.Sprint(r.Seq), Status: 200, Body: r.Body, BodySize: len(r.Body)}
		read(r, rd)
		s.event(timeline.Event{Time: end, Kind: timeline.ReadBack, Read: rd})
	}
	return s.event(timeline.Event{Time: end, Kind: timeline.ReadBackDone})
}
