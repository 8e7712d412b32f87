package fuzztarget

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/chaoskit/chaoskit/fuzz"
	"github.com/chaoskit/chaoskit/plan"
)

// fuzzSpace is the fuzz scenario Schedule draw schedules from:
// every action, value ranges and lists, few contracts (loading is what
// costs), its points left as written (no catalog).
const fuzzSpace = `name: space
target:
  url: http://127.0.0.1:8080
  failpoints: http://127.0.0.1:7070
load:
  rate: 100/s
  requests:
    - path: /items/{1..9}
fuzz:
  warmup: 500ms
  recovery: 1s
  phases: 1..4
  duration: 200ms..2s
  max_faults: 3
  faults:
    - point: store/query
      actions: [timeout, error, latency]
      latency: 5ms..1s
      errors: [db down, "costs $$5, 'quoted'"]
      probability: 0.05..1
    - point: cache/get
      actions: [panic, status]
      statuses: [429, 500, 503]
      probability: 0.5
    - point: upstream/call
      actions: [latency, status]
contracts:
  - name: recovered
    phase: recovery
    last: 500ms
    expect: [status == 200 for >= 99%]
  - name: no errors
    expect: [status < 500 for == 100%]
`

var scheduleBase = sync.OnceValue(func() *plan.Scenario {
	sc, err := plan.Parse("space.yaml", []byte(fuzzSpace), plan.Options{})
	if err != nil {
		panic(err)
	}
	return sc
})

// Schedule is the body of the fault-schedule fuzz targets (FuzzSchedule in
// fuzz's tests for go test -fuzz, and here for go-fuzz). The bytes choose a schedule through
// the decoder chaoskit fuzz's generator shares, and every schedule must be
// valid, render to a scenario that loads, and load back as itself; the
// shrink candidate the last byte picks must load whenever it validates.
// It panics on a broken property and returns 1 for every input (all decode
// to a schedule, so all are interesting to go-fuzz).
func Schedule(data []byte) int {
	sc := scheduleBase()
	s := fuzz.Decode(sc.Fuzz, data)
	if err := s.Validate(sc.Fuzz); err != nil {
		panic(fmt.Sprintf("decoded an invalid schedule %s: %v", s, err))
	}
	got, text, err := fuzz.Load(sc, s, "shop-fuzz", "fuzz.yaml", "", plan.Options{})
	if err != nil {
		panic(fmt.Sprintf("schedule %s does not load: %v\n%s", s, err, text))
	}
	if back := fuzz.Extract(got); !reflect.DeepEqual(back.Phases, s.Phases) {
		panic(fmt.Sprintf("schedule %s loaded back as %s", s, back))
	}
	if len(data) == 0 {
		return 1
	}
	sh := &fuzz.Shrinker{Keep: map[string]bool{plan.FuzzRecovery: true}, Space: sc.Fuzz, MinScale: 0.5}
	steps, cands := sh.Candidates(s)
	if len(cands) == 0 {
		return 1
	}
	i := int(data[len(data)-1]) % len(cands)
	if cands[i].Validate(sc.Fuzz) != nil {
		return 1
	}
	if _, text, err := fuzz.Load(sc, cands[i], "shop-fuzz", "fuzz.yaml", "", plan.Options{}); err != nil {
		panic(fmt.Sprintf("shrink candidate %q of %s validates but does not load: %v\n%s", steps[i], s, err, text))
	}
	return 1
}
