package reload

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"golang.org/x/time/rate"

	"github.com/chaoskit/chaoskit/breakerimpl/circuitbreaker"
	"github.com/chaoskit/chaoskit/breakerimpl/retry"
)

// MaxVersions is how many versions Targets keeps; the oldest are
// forgotten first (the initial one too, once there are more).
const MaxVersions = 50

// Version is one set of settings the targets had: "initial" (what they
// were made with, recorded when a file is first applied), then "v1", "v2",
// … for each file applied and each rollback, in order. It holds every
// setting of every target, not only those the file named, so that rolling
// back to it restores them all.
type Version struct {
	// Name is "initial" or "v" and a number.
	Name string `json:"name"`
	// Source says where it came from: the policy file's name, or
	// "rollback to NAME".
	Source string `json:"source"`
	// At is when it was applied.
	At time.Time `json:"at"`

	breakers map[string]circuitbreaker.Settings
	retries  map[string]retry.Settings
	limiters map[string]limit
	guards   guardSettings
}

type limit struct {
	rate  rate.Limit
	burst int
}

// capture records the settings in force of every target; t.mu is held.
func (t *Targets) capture(name, source string) Version {
	v := Version{Name: name, Source: source, At: time.Now(),
		breakers: map[string]circuitbreaker.Settings{}, retries: map[string]retry.Settings{}, limiters: map[string]limit{}}
	for n, b := range t.breakers {
		v.breakers[n] = b.Settings()
	}
	for n, r := range t.retries {
		v.retries[n] = r.Settings()
	}
	for n, l := range t.limiters {
		v.limiters[n] = limit{l.Limiter().Limit(), l.Limiter().Burst()}
	}
	v.guards = t.captureGuards()
	return v
}

// record adds the settings now in force as the next version; t.mu is
// held. The first time, the settings before (initial) come first.
func (t *Targets) record(source string, initial *Version) {
	if len(t.versions) == 0 && initial != nil {
		t.versions = append(t.versions, *initial)
	}
	t.seq++
	t.versions = append(t.versions, t.capture("v"+strconv.Itoa(t.seq), source))
	if len(t.versions) > MaxVersions {
		t.versions = slices.Delete(t.versions, 0, len(t.versions)-MaxVersions)
	}
}

// Versions returns the versions kept, oldest first; the last is the one
// in force.
func (t *Targets) Versions() []Version {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.versions)
}

// Rollback restores every setting of the version named name (as Versions
// lists it) to the targets, keeping their counts, and records the result
// as a new version. Targets registered after that version keep their
// settings.
func (t *Targets) Rollback(name string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.IndexFunc(t.versions, func(v Version) bool { return v.Name == name })
	if i < 0 {
		names := make([]string, len(t.versions))
		for j, v := range t.versions {
			names[j] = v.Name
		}
		return fmt.Errorf("reload: no version %q (kept: %v)", name, names)
	}
	v := t.versions[i]
	for _, n := range slices.Sorted(maps.Keys(v.breakers)) {
		if b, ok := t.breakers[n]; ok {
			s := v.breakers[n]
			b.Update(func(cur *circuitbreaker.Settings) { *cur = s })
		}
	}
	for n, s := range v.retries {
		if r, ok := t.retries[n]; ok {
			r.Update(func(cur *retry.Settings) { *cur = s })
		}
	}
	for n, l := range v.limiters {
		if tb, ok := t.limiters[n]; ok {
			tb.Limiter().SetLimit(l.rate)
			tb.Limiter().SetBurst(l.burst)
		}
	}
	t.restoreGuards(v.guards)
	t.record("rollback to "+name, nil)
	return nil
}
