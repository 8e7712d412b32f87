package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/writebehind"
	"github.com/chaoskit/chaoskit/demo/store"
)

// SourceQueue is the X-Chaoskit-Source of an order accepted into the
// write-behind queue (202 Accepted) rather than committed.
const SourceQueue = "queue"

// orderQueue is the write-behind fallback of the orders (Config.WriteBehind):
// orders the database refuses are accepted into a queue file and written
// when it is back, in order and once each (the idempotency key).
type orderQueue struct {
	q   *writebehind.Queue
	dir string // a directory the demo made, removed at close when empty
}

// newOrderQueue opens the queue in cfg.WriteBehindDir, or in a new
// temporary directory.
func (s *Server) newOrderQueue() (*orderQueue, error) {
	oq := &orderQueue{}
	dir := s.cfg.WriteBehindDir
	if dir == "" {
		d, err := os.MkdirTemp("", "chaoskit-demo-orders-")
		if err != nil {
			return nil, fmt.Errorf("write-behind queue: %w", err)
		}
		dir, oq.dir = d, d
	}
	q, err := writebehind.Open(writebehind.Settings{
		Name: "orders", Path: filepath.Join(dir, "orders.queue"), MaxPending: 5000,
		Apply: s.applyQueuedOrder,
		// A product that does not exist can never be ordered; createOrder
		// checks the id before it queues, so this is a bug if it happens.
		Discard: func(err error) bool { return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) },
		OnDiscard: func(e writebehind.Entry, err error) {
			s.log.Error("queued order can never be stored: dropped", "key", e.Key, "err", err)
		},
	})
	if err != nil {
		if oq.dir != "" {
			os.RemoveAll(oq.dir)
		}
		return nil, err
	}
	oq.q = q
	return oq, nil
}

// applyQueuedOrder writes one queued order, through the orders breaker.
func (s *Server) applyQueuedOrder(ctx context.Context, e writebehind.Entry) error {
	var o store.Order
	if err := json.Unmarshal(e.Data, &o); err != nil {
		return fmt.Errorf("queued order %s: %w", e.Key, err)
	}
	_, err := breakerimpl.Run(ctx, s.orderGuard, func(ctx context.Context) (createResult, error) {
		ctx, cancel := context.WithTimeout(ctx, orderTimeout)
		defer cancel()
		got, created, err := s.store.CreateOrder(ctx, o)
		return createResult{got, created}, err
	})
	if err != nil && s.cfg.WriteBehindLossy {
		// Broken on purpose: a replay that fails drops the order it was
		// given, which the client was told is accepted.
		s.log.Error("queued order dropped", "order", o.ID, "err", err)
		return nil
	}
	return err
}

// queueOrder accepts o into the queue and answers 202 with the order (the
// pending one of its idempotency key, for a replay), or 503 when the
// queue is full.
func (s *Server) queueOrder(w http.ResponseWriter, o store.Order, reason string) {
	h := w.Header()
	data, err := json.Marshal(o)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	e, _, err := s.orders.q.Enqueue(o.IdempotencyKey, data)
	if err != nil {
		h.Set(HeaderSource, "none")
		h.Set(HeaderReason, breakerimpl.ReasonOf(err).String())
		h.Set("Retry-After", "1")
		s.log.Warn("order refused, write-behind queue", "err", err)
		http.Error(w, "orders temporarily unavailable, retry later", http.StatusServiceUnavailable)
		return
	}
	var queued store.Order
	if err := json.Unmarshal(e.Data, &queued); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.Set("Location", "/orders/"+queued.ID)
	h.Set(HeaderSource, SourceQueue)
	h.Set(HeaderReason, reason)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	writeJSONBody(w, queued)
}

// close writes what is pending for up to two seconds, then closes the
// queue; a temporary directory is removed only when nothing is left in it.
func (oq *orderQueue) close(log interface{ Warn(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	flushed := oq.q.Flush(ctx) == nil
	oq.q.Close()
	if oq.dir == "" {
		return
	}
	if !flushed {
		log.Warn("queued orders left unwritten at exit", "queue", filepath.Join(oq.dir, "orders.queue"), "pending", oq.q.Pending())
		return
	}
	os.RemoveAll(oq.dir)
}
