package plan

import (
	"sync"

	"github.com/chaoskit/chaoskit/contract"
)

// Profile is what chaoskit knows of a kind of target beyond what a
// scenario writes: its failpoints, a check of its arguments and the
// conventions of its answers. A target profile registers itself (the demo
// shop's is demo/profile, linked into the chaoskit binary), so that the
// engine never imports an example service.
type Profile struct {
	// Name is the key under target: that selects the profile ("demo").
	Name string
	// Failpoints lists the full paths of the target's failpoint markers.
	Failpoints []string
	// CheckArgs checks the target's args as the target will parse them;
	// nil leaves them unchecked.
	CheckArgs func(args []string) error
	// Conventions are the response headers the target states its source,
	// the age of a served copy and its breaker's state in. A scenario's
	// classify: section overrides each one it sets.
	Conventions Conventions
}

// Conventions name the response headers a service states its serving in.
// Empty names mean the service states none.
type Conventions struct {
	SourceHeader, AgeHeader, BreakerHeader string
}

var profiles sync.Map // name → Profile

// RegisterProfile makes p the profile of targets named p.Name; a later
// registration of the same name replaces it.
func RegisterProfile(p Profile) { profiles.Store(p.Name, p) }

// ProfileOf returns the profile of t: the demo's for a demo target; ok is
// false for a target of no profile, or when the profile is not linked in.
func ProfileOf(t Target) (Profile, bool) {
	if t.Demo == nil {
		return Profile{}, false
	}
	p, ok := profiles.Load("demo")
	if !ok {
		return Profile{}, false
	}
	return p.(Profile), true
}

// fill sets the headers cls leaves empty from the target profile's
// conventions.
func (c Conventions) fill(cls *contract.Classification) {
	if cls.SourceHeader == "" && cls.SourceJSON == "" {
		cls.SourceHeader = c.SourceHeader
	}
	if cls.AgeHeader == "" {
		cls.AgeHeader = c.AgeHeader
	}
	if cls.BreakerHeader == "" {
		cls.BreakerHeader = c.BreakerHeader
	}
}
