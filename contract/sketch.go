package contract

import "github.com/chaoskit/chaoskit/internal/sketch"

// latencies holds a window's latencies in constant memory (package
// sketch; docs/contracts.md states the bound).
type latencies = sketch.Latencies

func newLatencies() *latencies { return sketch.New(sketch.Exact, sketch.Digits) }
