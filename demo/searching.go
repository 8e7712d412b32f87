package demo

import (
	"net/http"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl/httpx"
	"github.com/chaoskit/chaoskit/breakerimpl/shed"
	"github.com/chaoskit/chaoskit/demo/search"
)

// searching is the expensive endpoint and what protects it: an adaptive
// shedder (drop when the CPU is hot and more requests are in flight than
// the service can finish) in front of a token-bucket rate limiter, a coarse
// ceiling for floods, kept in memory or in Redis (Config.Redis).
type searching struct {
	engine       *search.Engine
	shedder      *shed.Shedder
	sampler      *shed.Sampler
	limiter      searchLimiter
	closeLimiter func()
	handler      http.Handler
}

func newSearching(s *Server) (*searching, error) {
	limiter, closeLimiter, err := newSearchLimiter(s.cfg)
	if err != nil {
		return nil, err
	}
	// The CPU is sampled every 100ms and smoothed over about a third of a
	// second (go-zero's 250ms and β = 0.95 take seconds to notice a burst).
	// Shedding starts when the container uses 75% of the CPU it may use.
	sr := &searching{
		engine:       search.New(s.store.DB(), s.cfg.SearchCost),
		sampler:      shed.NewSampler(shed.SamplerSettings{Period: 100 * time.Millisecond, Beta: 0.6}),
		limiter:      limiter,
		closeLimiter: closeLimiter,
	}
	sr.shedder = shed.New(shed.Settings{Name: "search", CPUThreshold: 0.75, Window: 2 * time.Second, Buckets: 20, CoolOff: 500 * time.Millisecond, CPU: sr.sampler})
	var h http.Handler = http.HandlerFunc(s.search)
	h = httpx.RateLimit(sr.limiter)(h)
	if rl, ok := sr.limiter.(*redisSearchLimiter); ok {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(HeaderLimiter, rl.backend())
			next.ServeHTTP(w, r)
		})
	}
	if !s.cfg.NoShedder {
		h = httpx.Shed(sr.shedder)(h)
	}
	sr.handler = h
	return sr, nil
}

func (sr *searching) close() {
	sr.shedder.Close()
	sr.sampler.Stop()
	sr.closeLimiter()
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	hits, err := s.searching.engine.Search(r.Context(), r.URL.Query().Get("q"))
	if err != nil {
		if r.Context().Err() != nil {
			return // the caller gave up
		}
		w.Header().Set(HeaderSource, "none")
		http.Error(w, "search failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set(HeaderSource, "db")
	writeJSON(w, hits)
}
