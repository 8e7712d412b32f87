package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/chaoskit/chaoskit/timeline"
)

// maxStateDoc bounds one state or metrics sample.
const maxStateDoc = 1 << 20

// maxSeries bounds the series one metrics sample records.
const maxSeries = 5000

// sampler reads one of the target's endpoints on every tick: the state
// endpoint (a JSON object) or the Prometheus metrics endpoint.
type sampler struct {
	url    string
	client *http.Client
	// accept is the request's Accept header; decode reads the body (nil
	// means decodeState).
	accept string
	decode func(io.Reader) (map[string]any, error)
	// record receives each sample, or the error of a failed one.
	record func(at time.Time, doc map[string]any, err error)

	mu   sync.Mutex
	last map[string]any
}

// startSampler starts sampling the target's state and metrics endpoints,
// those the scenario has, and returns the function that stops them.
func (r *run) startSampler() func() {
	var stops []func()
	if st := r.sc.Target.State; st != nil {
		r.sampler = &sampler{url: r.tgt.baseURL + st.Path, client: r.tgt.client, decode: decodeState,
			record: r.recorder(timeline.State, "state sample failed: ")}
		stops = append(stops, r.sampler.start(st.Interval.D()))
	}
	if m := r.sc.Target.Metrics; m != nil {
		ms := &sampler{url: r.tgt.baseURL + m.Path, client: r.tgt.client, accept: string(expfmt.NewFormat(expfmt.TypeTextPlain)),
			decode: metricsDecoder(m.Names), record: r.recorder(timeline.Metrics, "metrics sample failed: ")}
		stops = append(stops, ms.start(m.Interval.D()))
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// recorder records samples as events of kind.
func (r *run) recorder(kind timeline.EventKind, failed string) func(time.Time, map[string]any, error) {
	return func(at time.Time, doc map[string]any, err error) {
		e := timeline.Event{Time: at, Kind: kind, Phase: r.phase.Load().(string), Data: doc}
		if err != nil {
			e.Message = failed + err.Error()
		}
		r.event(e)
	}
}

// start samples every interval on a goroutine of its own, until the
// returned function is called.
func (s *sampler) start(interval time.Duration) func() {
	ctx, cancel := context.WithCancel(context.Background())
	tick := time.NewTicker(interval)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.run(ctx, tick.C)
	}()
	return func() {
		cancel()
		tick.Stop()
		<-done
	}
}

// run samples once at once and then on every tick until ctx ends. Failures
// are recorded only when sampling starts to fail, not on every tick.
func (s *sampler) run(ctx context.Context, tick <-chan time.Time) {
	failing := false
	sample := func() {
		doc, err := s.sample(ctx)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failing = false
			s.mu.Lock()
			s.last = doc
			s.mu.Unlock()
			s.record(time.Now(), doc, nil)
			return
		}
		if !failing {
			s.record(time.Now(), nil, err)
		}
		failing = true
	}
	sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			sample()
		}
	}
}

func (s *sampler) sample(ctx context.Context) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	if s.accept != "" {
		req.Header.Set("Accept", s.accept)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxStateDoc))
		if r := redirected(resp); r != "" {
			return nil, fmt.Errorf("GET %s: %s", s.url, r)
		}
		return nil, fmt.Errorf("GET %s: %s", s.url, resp.Status)
	}
	decode := s.decode
	if decode == nil {
		decode = decodeState
	}
	doc, err := decode(io.LimitReader(resp.Body, maxStateDoc))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", s.url, err)
	}
	return doc, nil
}

// decodeState reads a state endpoint's JSON object.
func decodeState(r io.Reader) (map[string]any, error) {
	var doc map[string]any
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	return doc, nil
}

// metricsDecoder reads the Prometheus text format with prometheus/common's
// parser and keeps the families named (every family when names is empty;
// a name "*SUFFIX" keeps those ending in SUFFIX), in the shape of a
// timeline.Metrics event.
func metricsDecoder(names []string) func(io.Reader) (map[string]any, error) {
	keep := func(name string) bool {
		if len(names) == 0 {
			return true
		}
		for _, n := range names {
			if n == name || (strings.HasPrefix(n, "*") && strings.HasSuffix(name, n[1:])) {
				return true
			}
		}
		return false
	}
	return func(r io.Reader) (map[string]any, error) {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(r)
		if err != nil {
			return nil, fmt.Errorf("not the Prometheus text format: %v", err)
		}
		out := map[string]any{}
		n := 0
		add := func(name string, labels map[string]any, v float64) {
			if !keep(name) || n >= maxSeries {
				return
			}
			n++
			list, _ := out[name].([]any)
			out[name] = append(list, map[string]any{"labels": labels, "value": jsonValue(v)})
		}
		for name, mf := range mfs {
			for _, m := range mf.GetMetric() {
				flatten(name, mf.GetType(), m, add)
			}
		}
		return map[string]any{"metrics": out}, nil
	}
}

// flatten calls add for every series of metric m of family name, as the
// text format writes them: histograms as _bucket{le}, _sum and _count,
// summaries as {quantile}, _sum and _count.
func flatten(name string, typ dto.MetricType, m *dto.Metric, add func(string, map[string]any, float64)) {
	labels := func(extra ...string) map[string]any {
		l := make(map[string]any, len(m.GetLabel())+1)
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	switch typ {
	case dto.MetricType_COUNTER:
		add(name, labels(), m.GetCounter().GetValue())
	case dto.MetricType_GAUGE:
		add(name, labels(), m.GetGauge().GetValue())
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		inf := false
		for _, b := range h.GetBucket() {
			inf = inf || math.IsInf(b.GetUpperBound(), 1)
			add(name+"_bucket", labels("le", formatFloat(b.GetUpperBound())), float64(b.GetCumulativeCount()))
		}
		if !inf {
			add(name+"_bucket", labels("le", "+Inf"), float64(h.GetSampleCount()))
		}
		add(name+"_sum", labels(), h.GetSampleSum())
		add(name+"_count", labels(), float64(h.GetSampleCount()))
	case dto.MetricType_SUMMARY:
		sm := m.GetSummary()
		for _, q := range sm.GetQuantile() {
			add(name, labels("quantile", formatFloat(q.GetQuantile())), q.GetValue())
		}
		add(name+"_sum", labels(), sm.GetSampleSum())
		add(name+"_count", labels(), float64(sm.GetSampleCount()))
	default:
		add(name, labels(), m.GetUntyped().GetValue())
	}
}

// formatFloat writes a bucket bound or quantile as the text format does.
func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// jsonValue is v, or its text for NaN and ±Inf, which JSON cannot hold.
func jsonValue(v float64) any {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return formatFloat(v)
	}
	return v
}

// latest returns the last good sample, or nil.
func (s *sampler) latest() map[string]any {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}
