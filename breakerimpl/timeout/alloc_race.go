//go:build race

package timeout

import "context"

// slabSize is 1 under the race detector: every context is allocated on its
// own (see alloc.go).
const slabSize = 1

// newCallContext returns a context for a call with the cancellable parent
// and deadline d.
func newCallContext(parent context.Context, d *deadline) *callContext {
	return &callContext{Context: parent, d: d}
}
