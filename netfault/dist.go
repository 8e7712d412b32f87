package netfault

import (
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"

	"github.com/chaoskit/chaoskit/inject/dist"
)

// distToxic is the toxic of a latency fault with a Distribution: toxiproxy's
// latency toxic, with the delay of each chunk drawn from the distribution
// instead of uniformly, and recorded. It is registered with toxiproxy's
// toxic registry under distToxicType, as toxiproxy's own toxics are.
type distToxic struct {
	// Dist is the distribution's text form (dist.Parse).
	Dist string `json:"dist"`
	// Recorder names the recorder of the delays applied, in recorders.
	Recorder string `json:"recorder"`
}

const distToxicType = "latency_distribution"

func init() { toxics.Register(distToxicType, new(distToxic)) }

// recorders holds the recorder of every distribution fault switched on,
// by the name its toxic carries: a toxic is made by toxiproxy from JSON,
// so it finds its recorder by name.
var recorders sync.Map // string -> *dist.Recorder

// GetBufferSize is the latency toxic's.
func (t *distToxic) GetBufferSize() int { return 1024 }

// Pipe delays each chunk by a delay drawn for it, counted from when the
// chunk came in, as toxiproxy's latency toxic does: chunks queued behind a
// slow one wait for it, and then for what is left of their own delay.
func (t *distToxic) Pipe(stub *toxics.ToxicStub) {
	d, err := dist.Parse(t.Dist)
	if err != nil { // Enable validated it; pass the data through untouched
		d = dist.Dist{Kind: dist.Fixed}
	}
	var rec *dist.Recorder
	if r, ok := recorders.Load(t.Recorder); ok {
		rec = r.(*dist.Recorder)
	}
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			delay := d.Sample()
			if rec != nil {
				rec.Record(delay)
			}
			sleep := delay - time.Since(c.Timestamp)
			timer := time.NewTimer(sleep)
			select {
			case <-timer.C:
				c.Timestamp = c.Timestamp.Add(sleep)
				stub.Output <- c
			case <-stub.Interrupt:
				timer.Stop()
				stub.Output <- c // no data is dropped
				return
			}
		}
	}
}
