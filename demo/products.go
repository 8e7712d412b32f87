package demo

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/prompolicy"
	"github.com/chaoskit/chaoskit/demo/store"
)

func (s *Server) product(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id <= 0 {
		http.Error(w, "product id must be a positive integer", http.StatusBadRequest)
		return
	}
	res, err := s.products.Execute(r.Context(), id, func(ctx context.Context) (store.Product, error) {
		if !s.cfg.NoDeadline {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.cfg.DBTimeout)
			defer cancel()
		}
		start := time.Now()
		p, err := s.store.Product(ctx, id)
		s.dbHealth.Record(time.Since(start), err)
		return p, err
	})
	if !errors.Is(err, store.ErrNotFound) {
		prompolicy.Observe(s.metrics.results, "products", res, err)
	}
	if err == nil && res.Source != breakerimpl.SourcePrimary {
		s.degraded.Store(true)
	}
	if err == nil && res.Source == breakerimpl.SourcePrimary && s.cfg.Bug == "stale-after-recovery" && id%10 == 7 && s.degraded.Load() {
		// Planted bug: this key family never leaves the cache again.
		if v, age, ok := s.cache.Peek(id); ok {
			res = breakerimpl.Result[store.Product]{Value: v, Source: "cache", Reason: breakerimpl.ReasonError, Age: age}
		}
	}
	h := w.Header()
	h.Set(HeaderBreaker, s.dbBreaker.State().String())
	if errors.Is(err, store.ErrNotFound) {
		h.Set(HeaderSource, "db")
		http.Error(w, "no such product", http.StatusNotFound)
		return
	}
	if s.cfg.StaleDisguised && res.Age > s.cfg.MaxStaleness/2 {
		// Broken on purpose: the copy states itself younger than it is.
		res.Age = s.cfg.MaxStaleness / 2
	}
	setSource(h, res, err, "db", true)
	switch {
	case err != nil:
		s.log.Warn("product unavailable", "id", id, "reason", res.Reason.String(), "err", err)
		http.Error(w, "product temporarily unavailable", http.StatusServiceUnavailable)
		return
	case res.Source != breakerimpl.SourcePrimary:
		s.log.Info("product served from fallback", "id", id, "source", res.Source, "reason", res.Reason.String(), "age", res.Age)
	}
	if s.cfg.FallbackEmpty && res.Source != breakerimpl.SourcePrimary {
		return // broken variant: 200 with an empty body
	}
	writeJSON(w, res.Value)
}
