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
	if s.latched.Load() {
		s.latchedProduct(w, id)
		return
	}
	var took time.Duration
	res, err := s.products.Execute(r.Context(), id, func(ctx context.Context) (store.Product, error) {
		if !s.cfg.NoDeadline {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.cfg.DBTimeout)
			defer cancel()
		}
		start := time.Now()
		p, err := s.store.Product(ctx, id)
		took = time.Since(start)
		s.dbHealth.Record(took, err)
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
	switch {
	case s.cfg.Lie == LieSource && err != nil && !errors.Is(err, store.ErrNotFound):
		// Broken on purpose: no copy served, and a placeholder named one.
		res, err = breakerimpl.Result[store.Product]{Value: store.Product{ID: id}, Source: "cache", Reason: res.Reason}, nil
	case s.cfg.Lie == LieDegrade && err == nil && res.Source == breakerimpl.SourcePrimary && took > degradeThreshold:
		// Broken on purpose: the slow database's answer named a copy the
		// degrade switch served.
		res.Source, res.Reason = "cache", breakerimpl.ReasonDegraded
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

// latchedProduct is the LiePrimary variant, broken on purpose: once the
// database breaker has closed after a fault, it answers from the cache for
// good, never asking the database again, as a breaker that never closed
// would, and names each copy the database's answer.
func (s *Server) latchedProduct(w http.ResponseWriter, id int) {
	h := w.Header()
	h.Set(HeaderBreaker, s.dbBreaker.State().String())
	v, age, ok := s.cache.Peek(id)
	if !ok || age > s.cfg.MaxStaleness {
		h.Set(HeaderSource, "none")
		h.Set(HeaderReason, breakerimpl.ReasonOpen.String())
		http.Error(w, "product temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	h.Set(HeaderSource, "db")
	writeJSON(w, v)
}
