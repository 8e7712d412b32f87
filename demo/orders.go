package demo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/demo/store"
)

// orderTimeout bounds one order write.
const orderTimeout = 200 * time.Millisecond

type orderRequest struct {
	ProductID int `json:"product_id"`
	Quantity  int `json:"quantity"`
}

type createResult struct {
	order   store.Order
	created bool
}

// createOrder is the write path. Without WriteBehind it has no fallback: a
// write either commits and is acknowledged (201, or 200 for a repeated
// idempotency key), or it is refused fast with 503 and Retry-After. With
// it, a write the database refuses is accepted into the queue (202) and
// written later; 503 only when the queue is full. It never acknowledges a write that
// is not committed (unless the AckBeforeCommit variant breaks that on
// purpose).
func (s *Server) createOrder(w http.ResponseWriter, r *http.Request) {
	var in orderRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.ProductID <= 0 || in.Quantity <= 0 {
		http.Error(w, `body must be {"product_id": N, "quantity": N} with positive numbers`, http.StatusBadRequest)
		return
	}
	o := store.Order{ID: store.NewOrderID(), IdempotencyKey: r.Header.Get("Idempotency-Key"), ProductID: in.ProductID, Quantity: in.Quantity, CreatedAt: time.Now().UTC()}
	if o.IdempotencyKey == "" {
		o.IdempotencyKey = o.ID
	}
	write := func(ctx context.Context) (createResult, error) {
		ctx, cancel := context.WithTimeout(ctx, orderTimeout)
		defer cancel()
		got, created, err := s.store.CreateOrder(ctx, o)
		return createResult{got, created}, err
	}
	h := w.Header()
	if s.orders != nil {
		if in.ProductID > s.cfg.Products {
			// Checked here because a queued order is written later, when
			// no one is left to tell.
			http.Error(w, "no such product", http.StatusUnprocessableEntity)
			return
		}
		if s.orders.q.Pending() > 0 {
			// Orders already wait in the queue: this one goes behind
			// them, so that they are written in the order accepted.
			s.queueOrder(w, o, "queued")
			return
		}
	}
	if s.cfg.AckBeforeCommit {
		// Broken on purpose: acknowledge, then try to commit.
		s.pending.Add(1)
		s.pendingCount.Add(1)
		go func() {
			defer s.pending.Done()
			defer s.pendingCount.Add(-1)
			if _, err := breakerimpl.Run(context.Background(), s.orderGuard, write); err != nil {
				s.log.Error("acknowledged order lost", "order", o.ID, "err", err)
			}
		}()
		h.Set("Location", "/orders/"+o.ID)
		h.Set(HeaderSource, "db")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		writeJSONBody(w, o)
		return
	}
	res, err := breakerimpl.Run(r.Context(), s.orderGuard, write)
	h.Set(HeaderBreaker, s.ordersBreaker.State().String())
	switch {
	case errors.Is(err, store.ErrNotFound):
		http.Error(w, "no such product", http.StatusUnprocessableEntity)
	case errors.Is(err, store.ErrConflict):
		http.Error(w, err.Error(), http.StatusConflict)
	case err != nil && s.orders != nil:
		s.log.Warn("order queued", "reason", breakerimpl.ReasonOf(err).String(), "err", err)
		s.queueOrder(w, o, breakerimpl.ReasonOf(err).String())
	case err != nil:
		reason := breakerimpl.ReasonOf(err).String()
		h.Set(HeaderSource, "none")
		h.Set(HeaderReason, reason)
		h.Set("Retry-After", "1")
		s.log.Warn("order refused", "reason", reason, "err", err)
		http.Error(w, "orders temporarily unavailable, retry later", http.StatusServiceUnavailable)
	default:
		if s.cfg.IdempotencyBroken && !res.created {
			res.order = o // broken on purpose: the replay's own order, never stored
		}
		h.Set("Location", "/orders/"+res.order.ID)
		h.Set(HeaderSource, "db")
		status := http.StatusOK
		if res.created {
			status = http.StatusCreated
		}
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		writeJSONBody(w, res.order)
	}
}

func (s *Server) order(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), orderTimeout)
	defer cancel()
	o, err := s.store.Order(ctx, r.PathValue("id"))
	switch {
	case errors.Is(err, store.ErrOrderNotFound):
		http.Error(w, "no such order", http.StatusNotFound)
	case err != nil:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "orders temporarily unavailable", http.StatusServiceUnavailable)
	default:
		writeJSON(w, o)
	}
}

// writeJSONBody writes v as JSON after the status line was written.
func writeJSONBody(w http.ResponseWriter, v any) {
	_ = json.NewEncoder(w).Encode(v)
}
