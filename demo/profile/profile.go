// Package profile registers the demo shop as a target profile of chaoskit
// (plan.Profile): its failpoints, the check of its arguments and the
// X-Chaoskit-* headers it states its source, the age of a cached copy and
// its breaker's state in. A blank import links it in; the chaoskit binary
// does, the engine packages never do.
package profile

import (
	"github.com/chaoskit/chaoskit/demo"
	"github.com/chaoskit/chaoskit/plan"
)

// The demo's response headers.
const (
	SourceHeader  = "X-Chaoskit-Source"
	AgeHeader     = "X-Chaoskit-Age"
	BreakerHeader = "X-Chaoskit-Breaker"
)

func init() {
	plan.RegisterProfile(plan.Profile{
		Name:        "demo",
		Failpoints:  demo.Failpoints(),
		CheckArgs:   demo.CheckArgs,
		Conventions: plan.Conventions{SourceHeader: SourceHeader, AgeHeader: AgeHeader, BreakerHeader: BreakerHeader},
	})
}
