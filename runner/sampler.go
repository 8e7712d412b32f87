package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// maxStateDoc bounds one state sample.
const maxStateDoc = 1 << 20

// sampler reads the target's state endpoint, a JSON object, on every tick.
type sampler struct {
	url    string
	client *http.Client
	// record receives each sample, or the error of a failed one.
	record func(at time.Time, doc map[string]any, err error)

	mu   sync.Mutex
	last map[string]any
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
	var doc map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxStateDoc)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("GET %s: not a JSON object: %v", s.url, err)
	}
	return doc, nil
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
