package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// readProbe reads a probe once: the first column of the first row of an
// SQL probe, the reply of a Redis one, the value an HTTP one names. It
// must be a number.
func (r *run) readProbe(ctx context.Context, p *plan.Probe) (float64, error) {
	s := p.Step()
	ctx, cancel := context.WithTimeout(ctx, s.StepTimeout())
	defer cancel()
	if p.Prometheus != "" {
		return queryPrometheus(ctx, p.Prometheus, p.Query, time.Now())
	}
	var (
		text string
		ok   bool
	)
	switch s.Kind() {
	case plan.StepSQL:
		got, err := r.setupSQL(ctx, s)
		if err != nil {
			return 0, err
		}
		text, ok = got[firstColumn]
	case plan.StepRedis:
		got, err := r.setupRedis(ctx, s)
		if err != nil {
			return 0, err
		}
		text, ok = got["reply"]
	default:
		resp, err := r.setupHTTP(ctx, s)
		if err != nil {
			return 0, err
		}
		v, err := plan.CaptureFrom(p.Value, resp.lookup)
		if err != nil {
			return 0, err
		}
		text, ok = v, true
	}
	if !ok {
		return 0, fmt.Errorf("it gave no value")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", shortBody([]byte(text)))
	}
	return v, nil
}

// recordProbe reads a probe once and records the reading.
func (r *run) recordProbe(ctx context.Context, p *plan.Probe, final bool) {
	v, err := r.readProbe(ctx, p)
	if ctx.Err() != nil {
		return // the run is stopping: no reading was made
	}
	data := map[string]any{}
	if err != nil {
		data["error"] = err.Error()
	} else {
		data["value"] = v
	}
	if final {
		data["final"] = true
	}
	r.event(timeline.Event{Kind: timeline.Probe, Message: p.Name, Data: data})
}

// startProbes reads every probe with an interval that often until the
// returned function is called (when the last phase ends).
func (r *run) startProbes(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range r.sc.Probes {
		p := &r.sc.Probes[i]
		if p.Interval <= 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(p.Interval.D())
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					r.recordProbe(ctx, p, false)
				}
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// finalProbes reads every probe after the last phase: at once, and then
// as often as it says for as long as the longest deadline of the
// expectations that read it (probe("x") ... within 5s), all at the same
// time.
func (r *run) finalProbes(ctx context.Context) error {
	if len(r.sc.Probes) == 0 {
		return nil
	}
	end := time.Now()
	var wg sync.WaitGroup
	for i := range r.sc.Probes {
		p := &r.sc.Probes[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r.recordProbe(ctx, p, true)
				// One reading at or past the deadline, so the last one
				// covers all of it.
				if time.Since(end) >= p.After || sleepCtx(ctx, p.Every()) != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}
