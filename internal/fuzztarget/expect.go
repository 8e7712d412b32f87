package fuzztarget

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

// Expect is the body of the contract language's fuzz targets (FuzzExpect
// in contract's tests for go test -fuzz, and here for go-fuzz): any text is an expectation that
// compiles, or fails with a *SyntaxError whose column lies within the
// text; one that compiles judges a small recorded run (phases, a fault,
// state samples, a write read back) without panicking, to pass, fail or
// inconclusive. It panics on a broken property and returns 1 for an
// expectation that compiles.
func Expect(data []byte) int {
	src := string(data)
	c, err := contract.Compile(contract.Spec{Name: "fuzz", Phase: "fault", Expect: []string{src}, MinSamples: 1, Classify: contract.Classification{SourceHeader: "Source", AgeHeader: "Age"}})
	if err != nil {
		var se *contract.SyntaxError
		if !errors.As(err, &se) {
			panic(fmt.Sprintf("%q: error %T %v is not a *SyntaxError", src, err, err))
		}
		if se.Msg == "" || se.Column < 0 || se.Column > len(src)+1 {
			panic(fmt.Sprintf("%q: syntax error %+v: want a message and a column within the text", src, se))
		}
		return 0
	}
	v := c.Evaluate(judgedRun())
	switch v.Outcome {
	case contract.Pass, contract.Fail, contract.Inconclusive:
	default:
		panic(fmt.Sprintf("%q: verdict %q", src, v.Outcome))
	}
	if len(v.Checks) != 1 {
		panic(fmt.Sprintf("%q: %d checks for one expectation", src, len(v.Checks)))
	}
	return 1
}

// judgedRun is the run Expect judges: warmup, fault (the database
// fault on, served from the cache, the breaker opening, an order written
// and later read back), recovery.
var judgedRun = sync.OnceValue(func() *timeline.Timeline {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tl := &timeline.Timeline{Meta: timeline.Meta{Scenario: "fuzz", Start: t0}, Complete: true}
	const point = "shop/store/productQuery"
	hits := int64(9)
	seq := uint64(0)
	for k, name := range []string{"warmup", "fault", "recovery"} {
		start := t0.Add(time.Duration(k) * time.Second)
		tl.Events = append(tl.Events, timeline.Event{Time: start, Kind: timeline.PhaseStart, Phase: name, Planned: time.Second})
		if name == "fault" {
			tl.Events = append(tl.Events, timeline.Event{Time: start, Kind: timeline.FaultOn, Phase: name, Point: point, Term: "return(true)"})
		}
		for i := 0; i < 10; i++ {
			seq++
			source, status := "db", 200
			if name == "fault" {
				source = "cache"
				if i%4 == 3 {
					source, status = "none", 503
				}
			}
			r := timeline.Request{Seq: seq, Phase: name, Time: start.Add(time.Duration(i) * 100 * time.Millisecond), Method: "GET",
				Target: fmt.Sprintf("GET /products/%d", i%3), Status: status, Latency: time.Duration(i+1) * time.Millisecond,
				Headers: map[string]string{"Source": source, "Content-Type": "application/json"}, Tags: []string{"read"}}
			r.URL = "http://127.0.0.1:1" + strings.TrimPrefix(r.Target, "GET ")
			if status == 200 {
				r.Body = fmt.Sprintf(`{"id":%d,"price_cents":%d,"tags":["a","b"]}`, i%3, 100+i%3)
				r.BodySize = len(r.Body)
			}
			if source == "cache" {
				r.Headers["Age"] = "1500"
			}
			tl.Requests = append(tl.Requests, r)
			state := "closed"
			if name == "fault" && i > 2 {
				state = "open"
			}
			tl.Events = append(tl.Events, timeline.Event{Time: r.Time, Kind: timeline.State, Phase: name,
				Data: map[string]any{"breakers": map[string]any{"db": map[string]any{"state": state}}, "db": map[string]any{"product_queries": float64(seq)}}})
		}
		end := start.Add(time.Second)
		if name == "fault" {
			tl.Events = append(tl.Events, timeline.Event{Time: end, Kind: timeline.FaultOff, Phase: name, Point: point},
				timeline.Event{Time: end, Kind: timeline.FaultHits, Phase: name, Point: point, Hits: &hits})
		}
		tl.Events = append(tl.Events, timeline.Event{Time: end, Kind: timeline.PhaseEnd, Phase: name})
	}
	seq++
	w := timeline.Request{Seq: seq, Phase: "fault", Time: t0.Add(1550 * time.Millisecond), Method: "POST", Target: "POST /orders", Status: 201,
		Body: `{"id":"o-1","quantity":1}`, Headers: map[string]string{"Source": "db"}, Tags: []string{"write"}}
	tl.Requests = append(tl.Requests, w)
	end := t0.Add(3 * time.Second)
	tl.Events = append(tl.Events,
		timeline.Event{Time: end, Kind: timeline.ReadBack, Read: &timeline.ReadBackResult{Write: seq, Target: "GET /orders/o-1", Status: 200, Body: `{"id":"o-1","quantity":1}`}},
		timeline.Event{Time: end, Kind: timeline.ReadBackDone},
		timeline.Event{Time: end, Kind: timeline.RunEnd, Message: "completed"})
	return tl
})
