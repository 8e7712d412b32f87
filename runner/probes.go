package runner

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// readProbe reads a probe once: the first column of the first row of an
// SQL probe, the reply of a Redis one, the value an HTTP one names (from
// the target, or from the dependency it names, over loopback with the
// control client). It must be a number.
func (r *run) readProbe(ctx context.Context, p *plan.Probe) (float64, error) {
	s := p.Step()
	ctx, cancel := context.WithTimeout(ctx, s.StepTimeout())
	defer cancel()
	if p.Prometheus != "" {
		return queryPrometheus(ctx, r.sc.Reach, p.Prometheus, p.Query, time.Now())
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
		var (
			resp *setupResponse
			err  error
		)
		if p.Dependency != "" {
			base := "http://127.0.0.1:" + strconv.Itoa(r.ports[p.Dependency])
			resp, err = r.httpStep(ctx, s, base, r.probeClient(p.Name, s.StepTimeout()))
		} else {
			resp, err = r.setupHTTP(ctx, s)
		}
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

// recordProbe reads a probe once and records the reading at the moment
// it was answered, with how long it took (took_ns): the figure was taken
// in between, which increase(probe(...)) needs to know which side of a
// window's edge it lies on.
func (r *run) recordProbe(ctx context.Context, p *plan.Probe, final bool) {
	sent := time.Now()
	v, err := r.readProbe(ctx, p)
	if ctx.Err() != nil {
		return // the run is stopping: no reading was made
	}
	data := map[string]any{"took_ns": time.Since(sent).Nanoseconds()}
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

// startProbes reads every probe with an interval once, all at the same
// time, before it returns (so that a window opening with the first phase
// has a reading at or before its start), and then that often until the
// returned function is called (when the last phase ends).
func (r *run) startProbes(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var first, wg sync.WaitGroup
	for i := range r.sc.Probes {
		p := &r.sc.Probes[i]
		if p.Interval <= 0 {
			continue
		}
		first.Add(1)
		go func() {
			defer first.Done()
			r.recordProbe(ctx, p, false)
		}()
	}
	first.Wait()
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

// probeClient is probe name's client to a dependency: ControlClient, made
// once, on loopback only (a dependency chaoskit starts listens there).
func (r *run) probeClient(name string, timeout time.Duration) *http.Client {
	if c, ok := r.probeClients.Load(name); ok {
		return c.(*http.Client)
	}
	c, _ := r.probeClients.LoadOrStore(name, ControlClient(timeout, nil))
	return c.(*http.Client)
}
