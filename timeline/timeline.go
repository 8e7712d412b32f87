// Package timeline holds the record of one chaoskit run: every request the
// load generator sent, with what came back, and every event (phase
// boundaries, faults switched on and off, samples of the target's state,
// process events) on one clock.
//
// A timeline is plain data. The runner streams it to disk while the run goes
// (see Writer), so a run that crashes keeps what it recorded; contracts and
// reports read it back (see Read) and never talk to a service.
package timeline

import (
	"net/http"
	"time"
)

// Meta describes the run a timeline belongs to.
type Meta struct {
	// Scenario is the scenario's name; File the path it was loaded from.
	Scenario string `json:"scenario"`
	File     string `json:"file,omitempty"`
	// Target says what was attacked, e.g. "demo" or a base URL.
	Target string `json:"target,omitempty"`
	// BaseURL is the address requests were sent to.
	BaseURL string `json:"base_url,omitempty"`
	// Control is the failpoint control endpoint faults were switched through.
	Control string    `json:"control,omitempty"`
	Start   time.Time `json:"start"`
	// Tool is the chaoskit version that recorded the run.
	Tool string `json:"tool,omitempty"`
	// Vars are the scenario's variable values, --var overrides applied;
	// RateScale the --rate-scale factor (0 when not given).
	Vars      map[string]string `json:"vars,omitempty"`
	RateScale float64           `json:"rate_scale,omitempty"`
	// FaultInjection is what the target's hit report said before the first
	// phase: true when its failpoint markers are live (a fault-injection
	// build), false when they are inert, nil when it could not tell or was
	// not asked (no faults). It tells a marker that never fired because no
	// request took its code path from one that could not fire.
	FaultInjection *bool `json:"fault_injection,omitempty"`
	// Shard is "i/n" when the run sent the i-th of n slices of the load
	// (chaoskit run --shard); FaultsOnly is true for a run that switched
	// the faults and sent no load (--faults-only). `chaoskit report
	// --merge` judges such runs as one.
	Shard      string `json:"shard,omitempty"`
	FaultsOnly bool   `json:"faults_only,omitempty"`
	// ScenarioSHA256 is the hex SHA-256 of the scenario copy saved in the
	// run directory (plan.CopyFile): `chaoskit report` judges with that
	// copy only when it still has this hash.
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
}

// Request is one request the load generator sent and what came back.
type Request struct {
	Seq    uint64    `json:"seq"`
	Phase  string    `json:"phase"`
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	// URL is the full request URL; Target the method and path as the
	// scenario expanded them ("GET /products/7"), the key baselines use.
	URL    string `json:"url"`
	Target string `json:"target"`
	// Status is the HTTP status, 0 when no response arrived (see Error).
	Status  int           `json:"status"`
	Latency time.Duration `json:"latency_ns"`
	Error   string        `json:"error,omitempty"`
	// Headers holds the response headers the run chose to keep, under their
	// canonical names.
	Headers map[string]string `json:"headers,omitempty"`
	// BodySize is the size of the response body; BodyHash its SHA-256 in
	// hex. Body is kept only when it is small (see MaxBody).
	BodySize int    `json:"body_size"`
	BodyHash string `json:"body_sha256,omitempty"`
	Body     string `json:"body,omitempty"`
	// Tags are labels given by the scenario's request spec; Template the
	// name of that spec, when it has one.
	Tags     []string `json:"tags,omitempty"`
	Template string   `json:"template,omitempty"`
}

// MaxBody is the largest response body a timeline keeps verbatim; larger ones
// keep only their size and hash.
const MaxBody = 16 << 10

// Header returns the kept response header name, or "".
func (r *Request) Header(name string) string {
	return r.Headers[http.CanonicalHeaderKey(name)]
}

// End is when the response finished.
func (r *Request) End() time.Time { return r.Time.Add(r.Latency) }

// EventKind names what an Event records.
type EventKind string

// The kinds of events a run records.
const (
	PhaseStart EventKind = "phase_start"
	PhaseEnd   EventKind = "phase_end"
	// FaultOn and FaultOff record a fault switched through the control
	// endpoint; Ack is the time from the moment the fault was due (a phase
	// boundary, or the fault's after/for offset) until the endpoint
	// acknowledged it.
	FaultOn  EventKind = "fault_on"
	FaultOff EventKind = "fault_off"
	// FaultHits records how often a fault's marker fired while it was on;
	// for a fault on an HTTP or gRPC proxy, how many requests it acted on
	// (Hits) of those it matched (Data "matched").
	FaultHits EventKind = "fault_hits"
	// FaultRequest records what a fault on an HTTP or gRPC proxy did to
	// one request it matched: Point is the fault's path, Data the request
	// ("request": "GET /price/7") and what was done ("done": "abort 503",
	// "delay 300ms", ..., or "passed" when its probability or count let
	// the request through).
	FaultRequest EventKind = "fault_request"
	// State is a sample of the target's state endpoint: Data is the JSON
	// document it served (Message, with no Data, when sampling failed).
	State EventKind = "state"
	// Metrics is a sample of the target's Prometheus metrics endpoint: Data
	// is {"metrics": {FAMILY: [{"labels": {NAME: VALUE}, "value": V}]}},
	// histograms and summaries flattened into their _bucket (le), _sum,
	// _count and quantile series as the text format writes them, and V a
	// number or, for NaN and ±Inf, a string (Message, with no Data, when
	// sampling failed).
	Metrics EventKind = "metrics"
	// Process records something the target process did (started, exited).
	Process EventKind = "process"
	// RunEnd closes the timeline of a run that finished (in any way).
	RunEnd EventKind = "run_end"
	// ReadBack records reading back one acknowledged write after the last
	// phase, with every fault off; ReadBackDone follows the last of them.
	ReadBack     EventKind = "read_back"
	ReadBackDone EventKind = "read_back_done"
	// Verify records one verification request (the scenario's verify:)
	// after the last phase and the read-back, with every fault off;
	// VerifyDone follows the last of them.
	Verify     EventKind = "verify"
	VerifyDone EventKind = "verify_done"
	// Setup records one setup step of the scenario, run before the first
	// phase: Message is the step's name, Data its kind, the time it took
	// (duration_ns), the names it captured (never their values) and, when
	// it failed, the error.
	Setup EventKind = "setup"
	// Teardown records one teardown step, run after the last phase or
	// when the run stopped early: Data as Setup's, and "skipped" with the
	// reason for a step that could not run (its dependency or the target
	// never started, a capture it uses was never made).
	Teardown EventKind = "teardown"
	// Probe is one reading of a scenario's probe (an SQL query, a Redis
	// command or an HTTP GET that gives a number): Message is the probe's
	// name, Data its value ("value") or why it could not be read
	// ("error"), and "final" on the readings after the last phase.
	Probe EventKind = "probe"
	// PromQL is the answer of a Prometheus server to one query of the
	// scenario's contracts, evaluated over the whole run (query_range)
	// after the last phase: Message is the query, Data the server, the
	// step (step_ns) and the series ({"labels": {...}, "values": [[UNIX
	// SECONDS, "VALUE"], ...]}), or why there is none ("error").
	PromQL EventKind = "promql"
	// ChainStop counts, at the end of a phase, the iterations of a
	// request chain that stopped before one of its steps because a value
	// the step needs could not be captured: the earlier step that was to
	// capture it failed, got no response, or answered without it. The
	// step and those after it were never sent, so they are no requests;
	// Message says so in a sentence, and Data holds the step's template
	// name (ChainTemplate), the capture (ChainCapture), the count
	// (ChainCount), the count by cause (ChainCauses: {"create got 500":
	// 9}) and the steps lost (ChainLost: the step and those after it,
	// each as a request filter sees it: {"template", "method", "path" as
	// written, "tags"}).
	ChainStop EventKind = "chain_stop"
)

// Keys of a ChainStop event's Data, and of each step it lost.
const (
	ChainTemplate = "template"
	ChainCapture  = "capture"
	ChainCount    = "count"
	ChainCauses   = "causes"
	ChainLost     = "lost"
	ChainMethod   = "method"
	ChainPath     = "path"
	ChainTags     = "tags"
)

// Event is one thing that happened during a run, other than a request.
type Event struct {
	Time  time.Time `json:"time"`
	Kind  EventKind `json:"kind"`
	Phase string    `json:"phase,omitempty"`
	// Point is the full failpoint path, Term the failpoint term that was set.
	Point string `json:"point,omitempty"`
	Term  string `json:"term,omitempty"`
	// Ack is the time from the phase boundary until the control endpoint
	// acknowledged the change.
	Ack time.Duration `json:"ack_ns,omitempty"`
	// Hits counts marker hits (FaultHits).
	Hits *int64 `json:"hits,omitempty"`
	// Planned is the phase's planned duration (PhaseStart).
	Planned time.Duration `json:"planned_ns,omitempty"`
	// Data carries a state sample or process details.
	Data map[string]any `json:"data,omitempty"`
	// Message is a human sentence about the event.
	Message string `json:"message,omitempty"`
	// Read is the result of a ReadBack.
	Read *ReadBackResult `json:"read,omitempty"`
	// Verified is the result of a Verify.
	Verified *VerifyResult `json:"verified,omitempty"`
}

// VerifyResult is the last answer to the verification request sent for
// one recorded request, after its retries.
type VerifyResult struct {
	// Request is the Seq of the recorded request it verifies.
	Request uint64 `json:"request_seq"`
	// Rule is the name of the verify: rule that made it.
	Rule string `json:"rule"`
	// Target is the verification request, e.g. "GET /c42".
	Target  string        `json:"target"`
	Status  int           `json:"status"`
	Latency time.Duration `json:"latency_ns"`
	Error   string        `json:"error,omitempty"`
	// Body is the response body when it is at most MaxBody long.
	Body     string `json:"body,omitempty"`
	BodySize int    `json:"body_size"`
	// Expect are the statuses (codes or classes, "404", "4xx") that say
	// the invariant holds; BodyContains a text the body must then hold.
	Expect       []string `json:"expect"`
	BodyContains string   `json:"body_contains,omitempty"`
	// Attempts is how many requests were sent (0: the request could not
	// be made, Error says why); Elapsed the time from the first to the
	// end of the last. No answer, or 408, 425, 429 or a 5xx, is tried
	// again until the rule's within.
	Attempts int           `json:"attempts,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns,omitempty"`
}

// Key of a VerifyDone event's Data: how many selected requests were not
// verified (beyond the runner's bound); their outcome is unknown.
const NotVerified = "not_verified"

// ReadBackResult is the read-back of one acknowledged write.
type ReadBackResult struct {
	// Write is the Seq of the write request it reads back.
	Write uint64 `json:"write_seq"`
	// Target is the read request, e.g. "GET /orders/42".
	Target  string        `json:"target"`
	Status  int           `json:"status"`
	Latency time.Duration `json:"latency_ns"`
	Error   string        `json:"error,omitempty"`
	// Body is the response body when it is at most MaxBody long.
	Body     string `json:"body,omitempty"`
	BodySize int    `json:"body_size"`
	// Compare names the JSON fields that must be equal in the write's
	// acknowledgement and the read; empty means every field of the
	// acknowledgement.
	Compare []string `json:"compare,omitempty"`
	// Missing are the statuses (codes or classes, "404", "4xx") with which
	// the read says the write is not there; empty means 404 and 410.
	Missing []string `json:"missing,omitempty"`
	// Attempts is how many reads were sent (0: the read could not be
	// made, Error says why); Elapsed the time from the first to the end
	// of the last. A read with no answer, or a transient one (408, 425,
	// 429, 5xx), is tried again until the write's read_within.
	Attempts int           `json:"attempts,omitempty"`
	Elapsed  time.Duration `json:"elapsed_ns,omitempty"`
}

// Key of a ReadBackDone event's Data: how many acknowledged writes were
// not read back (beyond the runner's bound); their fate is unknown.
const NotReadBack = "not_read_back"

// Keys of a Process event that stopped a process with a signal (a
// terminate or restart fault; the target's and every dependency's stop at
// the run's end, which also carry at_end): the process's name as process
// faults give it ("target", a dependency's name), when the signal was sent
// (unix nanoseconds), how long the process took to be gone after it, the
// grace it had, and killed_after_grace when it was still running after the
// grace and was killed.
const (
	StopProcess      = "process"
	Signalled        = "signalled_ns"
	StopTook         = "took_ns"
	StopGrace        = "grace_ns"
	KilledAfterGrace = "killed_after_grace"
	StopAtEnd        = "at_end"
)

// Stop is one process stopped with a signal, as its Process event records
// it (see Signalled).
type Stop struct {
	Process   string
	Signalled time.Time
	Took      time.Duration
	Grace     time.Duration
	Killed    bool
	// AtEnd is set for the stop at the run's end; the others are process
	// faults.
	AtEnd bool
}

// Stops returns the processes stopped with a signal during the run, in
// the order recorded. A record made before stops were timed holds none.
func (t *Timeline) Stops() []Stop {
	var out []Stop
	for _, e := range t.Events {
		if e.Kind != Process {
			continue
		}
		at, ok := Number(e.Data[Signalled])
		if !ok {
			continue
		}
		st := Stop{Signalled: time.Unix(0, int64(at))}
		st.Process, _ = e.Data[StopProcess].(string)
		if n, ok := Number(e.Data[StopTook]); ok {
			st.Took = time.Duration(n)
		}
		if n, ok := Number(e.Data[StopGrace]); ok {
			st.Grace = time.Duration(n)
		}
		st.Killed, _ = e.Data[KilledAfterGrace].(bool)
		st.AtEnd, _ = e.Data[StopAtEnd].(bool)
		out = append(out, st)
	}
	return out
}

// Keys of a PhaseEnd event's Data: how many requests the phase's pacer
// planned, how many the load generator sent, and how many it could have in
// flight at once; and the moment the load generator was furthest behind
// its plan (an offset into the phase), with the requests planned and sent
// by then. A generator that stalls and then catches up in a burst (a
// paused process, a starved machine) sends its planned total but not the
// load the scenario describes; the moment shows it.
//
// For a load of request chains the pacer paces iterations, not requests:
// PlannedRequests and SentRequests count iterations planned and started,
// and ChainCut the iterations the phase's end cut before their last step.
const (
	ChainCut        = "chain_cut"
	PlannedRequests = "planned_requests"
	SentRequests    = "sent_requests"
	MaxWorkers      = "max_workers"
	BehindAt        = "behind_at_ns"
	PlannedBy       = "planned_by"
	SentBy          = "sent_by"
)

// StallFrom and StallMinPlanned bound the moments at which a phase's
// delivery is measured against its plan by then: from StallFrom into the
// phase (or its end, when shorter) and from StallMinPlanned requests
// planned, where one request sent a few milliseconds late is not yet a
// share of the plan. The runner picks its moment among those, and the
// judge ignores a moment outside them (recorded by an older chaoskit).
const (
	StallFrom       = time.Second
	StallMinPlanned = 10
)

// Phase is the span of one phase, derived from its start and end events.
type Phase struct {
	Name    string        `json:"name"`
	Start   time.Time     `json:"start"`
	End     time.Time     `json:"end"`
	Planned time.Duration `json:"planned_ns"`
}

// A phase's load stops at its planned length, and the phase ends when the
// last request still in flight is answered or times out. A service that
// holds requests (a handler hanging on a dependency) keeps the phase going
// past its plan: every later phase starts that much later, and a window
// counted back from the phase's end would hold the held requests' answers
// instead of the load the scenario describes.
//
// overrunMin and OverrunShare say when a phase overran: when it ended more
// than overrunMin and more than OverrunShare of its planned length after
// its planned end. Below that, the last answers of a service that is
// merely slow (a few hundred milliseconds each) are no overrun.
const (
	overrunMin   = 500 * time.Millisecond
	OverrunShare = 0.1
)

// Overrun is how far the phase ran past its planned length; 0 when it did
// not overrun (see overrunMin), or when the record holds no plan.
func (p Phase) Overrun() time.Duration {
	if p.Planned <= 0 {
		return 0
	}
	o := p.End.Sub(p.Start) - p.Planned
	if o <= overrunMin || float64(o) <= OverrunShare*float64(p.Planned) {
		return 0
	}
	return o
}

// Timeline is a whole run record.
type Timeline struct {
	Meta     Meta
	Requests []Request
	Events   []Event
	// Complete is false when the record ends without a RunEnd event, as it
	// does when the recording process was killed.
	Complete bool
	// lastEnd is, per phase, when its last response ended, for a phase
	// that never ended and whose requests are not held (see OpenDir).
	lastEnd map[string]time.Time
}

// Phases returns the phases in the order they ran, from the phase events. A
// phase that started but never ended (an interrupted run) ends at its last
// request or event.
func (t *Timeline) Phases() []Phase {
	var out []Phase
	index := map[string]int{}
	for _, e := range t.Events {
		switch e.Kind {
		case PhaseStart:
			index[e.Phase] = len(out)
			out = append(out, Phase{Name: e.Phase, Start: e.Time, Planned: e.Planned})
		case PhaseEnd:
			if i, ok := index[e.Phase]; ok {
				out[i].End = e.Time
			}
		}
	}
	for i := range out {
		if !out[i].End.IsZero() {
			continue
		}
		end := out[i].Start
		if e := t.lastEnd[out[i].Name]; e.After(end) {
			end = e
		}
		for _, r := range t.Requests {
			if r.Phase == out[i].Name && r.End().After(end) {
				end = r.End()
			}
		}
		out[i].End = end
	}
	return out
}

// Phase returns the named phase.
func (t *Timeline) Phase(name string) (Phase, bool) {
	for _, p := range t.Phases() {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// PhaseRequests returns the requests sent in the named phase, in send order.
func (t *Timeline) PhaseRequests(name string) []Request {
	var out []Request
	for _, r := range t.Requests {
		if r.Phase == name {
			out = append(out, r)
		}
	}
	return out
}
