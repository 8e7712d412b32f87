package fallback

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/chaoskit/chaoskit/breakerimpl"
)

// ErrDisabled is the error of a Toggled fallback whose Toggle is off.
var ErrDisabled = errors.New("fallback: disabled by its toggle")

// Toggle turns fallbacks off and on while a service runs: an operator's
// switch (a policy file's `fallbacks:` entry, see package reload) to stop
// serving a fallback that turned out wrong, or to see a dependency's
// failures as users would without it. The zero value is on; it is safe
// for concurrent use.
type Toggle struct{ off atomic.Bool }

// Enabled reports whether the fallbacks of the toggle serve.
func (t *Toggle) Enabled() bool { return !t.off.Load() }

// SetEnabled turns the fallbacks of the toggle on or off.
func (t *Toggle) SetEnabled(on bool) { t.off.Store(!on) }

// Toggled serves Fallback while Toggle is on (or nil). Off, it serves
// nothing: Recover returns ErrDisabled, so the caller gets the primary's
// error. Remember is passed on either way, so that a cache is warm when the
// toggle is turned on again.
type Toggled[K comparable, T any] struct {
	Fallback breakerimpl.Fallback[K, T]
	Toggle   *Toggle
}

// Remember passes v on to Fallback.
func (f Toggled[K, T]) Remember(key K, v T) { f.Fallback.Remember(key, v) }

// Recover asks Fallback while the toggle is on.
func (f Toggled[K, T]) Recover(ctx context.Context, key K, err error) (breakerimpl.Result[T], error) {
	if f.Toggle != nil && !f.Toggle.Enabled() {
		return breakerimpl.Result[T]{}, ErrDisabled
	}
	return f.Fallback.Recover(ctx, key, err)
}
