package fuzz

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/chaoskit/chaoskit/inject"
	"github.com/chaoskit/chaoskit/plan"
)

// A schedule is drawn by a sequence of choices, each "one of n". The same
// drawing code serves a seeded generator (chaoskit fuzz) and a decoder from
// bytes (go test -fuzz and go-fuzz), so any byte string is a valid schedule
// and the fuzzing engines explore exactly the space chaoskit fuzz does.
type chooser interface {
	// intn returns a choice in [0, n); n >= 1.
	intn(n int) int
}

// seeded draws choices from a PCG generator.
type seeded struct{ r *rand.Rand }

func (s seeded) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return s.r.IntN(n)
}

// decoded draws choices from bytes: one byte for up to 256 options, two
// for up to 65536, four beyond; 0 once the bytes run out.
type decoded struct{ data []byte }

func (d *decoded) intn(n int) int {
	if n <= 1 {
		return 0
	}
	var v uint64
	switch {
	case len(d.data) == 0:
		return 0
	case n <= 1<<8:
		v, d.data = uint64(d.data[0]), d.data[1:]
	case n <= 1<<16 && len(d.data) >= 2:
		v, d.data = uint64(binary.BigEndian.Uint16(d.data)), d.data[2:]
	case len(d.data) >= 4:
		v, d.data = uint64(binary.BigEndian.Uint32(d.data)), d.data[4:]
	default:
		v, d.data = uint64(d.data[0]), d.data[1:]
	}
	return int(v % uint64(n))
}

// Generate returns the schedule of a trial: the same fault space, seed and
// trial number always give the same schedule, whatever other trials ran.
func Generate(fz *plan.FaultSpace, seed uint64, trial int) Schedule {
	return draw(fz, seeded{rand.New(rand.NewPCG(seed, uint64(trial)))})
}

// Decode returns the schedule the bytes choose. Every byte string decodes
// to a valid schedule of the fault space; running out of bytes chooses the
// first option of every remaining choice.
func Decode(fz *plan.FaultSpace, data []byte) Schedule {
	return draw(fz, &decoded{data: data})
}

// Steps in which schedules are drawn, so that they read well and shrink in
// whole steps.
const (
	phaseStep   = 100 * time.Millisecond
	latencyStep = 10 * time.Millisecond
	probStep    = 0.05
)

func draw(fz *plan.FaultSpace, ch chooser) Schedule {
	s := Schedule{Phases: []Phase{{Name: plan.FuzzWarmup, Duration: fz.Warmup.D()}}}
	n := fz.Phases.Min + ch.intn(fz.Phases.Max-fz.Phases.Min+1)
	for i := 1; i <= n; i++ {
		p := Phase{Name: fmt.Sprintf("faults-%d", i), Duration: durationIn(ch, fz.Duration.Min, fz.Duration.Max, phaseStep)}
		most := min(max(fz.MaxFaults, 1), len(fz.Faults))
		k := 1 + ch.intn(most)
		// A partial Fisher-Yates shuffle picks k distinct points.
		order := make([]int, len(fz.Faults))
		for j := range order {
			order[j] = j
		}
		for j := 0; j < k; j++ {
			r := j + ch.intn(len(order)-j)
			order[j], order[r] = order[r], order[j]
			p.Faults = append(p.Faults, drawFault(ch, &fz.Faults[order[j]], p.Duration))
		}
		s.Phases = append(s.Phases, p)
	}
	s.Phases = append(s.Phases, Phase{Name: plan.FuzzRecovery, Duration: fz.Recovery.D()})
	return s
}

func drawFault(ch chooser, ff *plan.FuzzFault, d time.Duration) Fault {
	f := Fault{Point: ff.Name(), Path: ff.Path, Proxy: ff.Proxy, Process: ff.Process, Match: ff.Match, Action: inject.Action(ff.Actions[ch.intn(len(ff.Actions))])}
	f.Value = valueFor(ch, ff, f.Action)
	if p := probabilityIn(ch, ff.Probability); f.hasProbability() {
		f.Probability = p // drawn either way, so that the choices after it stay put
	}
	// Half the faults cover their whole phase; the others start somewhere
	// in its first half and last a while, possibly to its end.
	if ch.intn(2) == 1 {
		f.After = durationIn(ch, 0, d/2, phaseStep)
		rest := d - f.After
		if steps := int(rest / phaseStep); steps > 1 {
			f.For = time.Duration(1+ch.intn(steps)) * phaseStep
			if f.For >= rest {
				f.For = 0
			}
		}
	}
	if f.Process != "" && f.Action == "restart" {
		f.For = 0 // a restart starts the process again at once
	}
	return f
}

// The actions of an HTTP or gRPC proxy whose value a schedule draws.
const (
	requestAbort inject.Action = "abort"
	requestDelay inject.Action = "delay"
)

// valueFor draws the value of an action.
func valueFor(ch chooser, ff *plan.FuzzFault, a inject.Action) string {
	switch a {
	case inject.Latency:
		return durationIn(ch, ff.Latency.Min, ff.Latency.Max, latencyStep).String()
	case inject.Error:
		return ff.Errors[ch.intn(len(ff.Errors))]
	case inject.Status:
		return strconv.Itoa(ff.Statuses[ch.intn(len(ff.Statuses))])
	case requestDelay:
		return durationIn(ch, ff.Latency.Min, ff.Latency.Max, latencyStep).String()
	case requestAbort:
		if len(ff.Statuses) > 0 { // an HTTP proxy's; a gRPC proxy's abort is UNAVAILABLE
			return strconv.Itoa(ff.Statuses[ch.intn(len(ff.Statuses))])
		}
	}
	return ""
}

// strongest returns the value of an action that faults hardest: the
// longest latency, the first error and status.
func strongest(ff *plan.FuzzFault, a inject.Action) string {
	switch a {
	case inject.Latency:
		return ff.Latency.Max.String()
	case inject.Error:
		return ff.Errors[0]
	case inject.Status:
		return strconv.Itoa(ff.Statuses[0])
	case requestDelay:
		return ff.Latency.Max.String()
	case requestAbort:
		if len(ff.Statuses) > 0 {
			return strconv.Itoa(ff.Statuses[0])
		}
	}
	return ""
}

// durationIn draws a duration in [lo, hi] in whole steps from lo.
func durationIn(ch chooser, lo, hi, step time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	steps := int((hi - lo) / step)
	return lo + time.Duration(ch.intn(steps+1))*step
}

// probabilityIn draws a probability in the range in steps of 5 %; 1 is
// written as 0 (always).
func probabilityIn(ch chooser, r plan.FloatRange) float64 {
	steps := int(math.Floor((r.Max-r.Min)/probStep + 1e-9))
	p := roundProb(r.Min + float64(ch.intn(steps+1))*probStep)
	if p >= 1 {
		return 0
	}
	return p
}

func roundProb(p float64) float64 { return math.Round(p*100) / 100 }
