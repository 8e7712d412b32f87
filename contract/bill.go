package contract

import (
	"fmt"
	"slices"
	"time"

	"github.com/chaoskit/chaoskit/timeline"
)

// Bill is what one fault cost the service's users, in their terms: of the
// requests sent while it was on, how many failed (an error or a timeout),
// were degraded (a fallback answer), were served a stale copy (an answer
// stating its age), were refused (rejected fast); how much it added to
// the p99 of the run's baseline phase; how long after it was switched off
// the primary answer held again; and the fates of the writes acknowledged
// while it was on.
type Bill struct {
	Fault string `json:"fault"`
	Term  string `json:"term,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Requests were sent while the fault was on.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	Degraded int `json:"degraded"`
	Stale    int `json:"stale"`
	Refused  int `json:"refused"`
	// P99 is the p99 latency of the requests sent while the fault was on;
	// P99Added is P99 less the baseline phase's p99, nil when the run has
	// no baseline phase (P99Unknown says why).
	P99        time.Duration  `json:"p99_ns"`
	P99Added   *time.Duration `json:"p99_added_ns,omitempty"`
	P99Unknown string         `json:"p99_unknown,omitempty"`
	// DegradedIn is how long after the fault was switched on its
	// degradation held: the time_to_degrade rule (a run of 10 requests
	// in send order, 90 % of them fallback answers) over the requests
	// sent while it was on; nil when they do not tell (DegradeUnknown
	// says why: no fallback answer at all, too few requests, a
	// degradation that never held).
	DegradedIn     *time.Duration `json:"degraded_in_ns,omitempty"`
	DegradeUnknown string         `json:"degrade_unknown,omitempty"`
	// Recovered is how long after the fault was switched off the primary
	// class held again (the time_to_recover rule: a run of 10 requests in
	// send order, 90 % of them primary); nil when the run cannot tell
	// (RecoverUnknown says why). Never is true when the primary class did
	// not hold in what the run sent after the fault: Recovered is then
	// the time those requests covered, a lower bound.
	Recovered      *time.Duration `json:"recovered_ns,omitempty"`
	Never          bool           `json:"never_recovered,omitempty"`
	RecoverUnknown string         `json:"recover_unknown,omitempty"`
	// Writes are the fates of the writes acknowledged while the fault was
	// on; nil when the run read no writes back.
	Writes *WriteCounts `json:"writes,omitempty"`
}

// String is the bill in one line: "41 of 412 requests failed, 0 degraded,
// 0 stale, 0 refused; p99 +860ms; degraded in 12ms; recovered in 1.2s; 0
// writes lost, 0 unknown".
func (b Bill) String() string {
	s := fmt.Sprintf("%d of %d requests failed, %d degraded, %d stale, %d refused", b.Failed, b.Requests, b.Degraded, b.Stale, b.Refused)
	if b.P99Added != nil {
		s += fmt.Sprintf("; p99 %s%s", sign(*b.P99Added), fmtDur(absDur(*b.P99Added)))
	}
	if b.DegradedIn != nil {
		s += "; degraded in " + fmtDur(*b.DegradedIn)
	}
	switch {
	case b.Never && b.Recovered != nil:
		s += "; not recovered in " + fmtDur(*b.Recovered)
	case b.Recovered != nil:
		s += "; recovered in " + fmtDur(*b.Recovered)
	}
	if b.Writes != nil {
		s += fmt.Sprintf("; %d writes lost, %d unknown", b.Writes.Lost, b.Writes.Unknown)
	}
	return s
}

func sign(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return "+"
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// maxRecoverRequests bounds the requests a bill keeps, while a fault is
// on and after it, to find its degradation and its recovery in send
// order.
const maxRecoverRequests = 4096

// billAcc accumulates one fault's bill as the requests stream past.
type billAcc struct {
	span  FaultSpan
	bill  Bill
	lat   *latencies
	until time.Time // the recovery is looked for before until (zero: the run's end)
	// during are the requests sent while the fault was on (in says
	// fallback), after those sent after it (in says primary).
	during, after []sentClass
	reads         map[uint64]*timeline.ReadBackResult
}

// sentClass is a request a bill times: when it was sent, and whether it
// was of the class the time waits for.
type sentClass struct {
	t  time.Time
	in bool
}

// newBills readies a bill per fault span. The recovery of a fault is
// looked for until the next fault goes on.
func newBills(tl *timeline.Timeline, spans []FaultSpan) []*billAcc {
	var reads map[uint64]*timeline.ReadBackResult
	done := false
	for i := range tl.Events {
		e := &tl.Events[i]
		switch {
		case e.Kind == timeline.ReadBackDone:
			done = true
		case e.Kind == timeline.ReadBack && e.Read != nil:
			if reads == nil {
				reads = map[uint64]*timeline.ReadBackResult{}
			}
			if _, dup := reads[e.Read.Write]; !dup {
				reads[e.Read.Write] = e.Read
			}
		}
	}
	out := make([]*billAcc, len(spans))
	for i, s := range spans {
		b := &billAcc{span: s, lat: newLatencies(), bill: Bill{Fault: s.Point, Term: s.Term, Phase: s.Phase}}
		if done {
			b.reads = reads
			if b.reads == nil {
				b.reads = map[uint64]*timeline.ReadBackResult{}
			}
			b.bill.Writes = &WriteCounts{}
		}
		if !s.Off.IsZero() {
			for _, o := range spans {
				if o.On.After(s.Off) && (b.until.IsZero() || o.On.Before(b.until)) {
					b.until = o.On
				}
			}
		}
		out[i] = b
	}
	return out
}

func (b *billAcc) add(r *timeline.Request, c Class, cls *Classification) {
	if b.span.activeAt(r.Time) {
		bl := &b.bill
		bl.Requests++
		switch c {
		case Error, Timeout:
			bl.Failed++
		case Fallback:
			bl.Degraded++
		case Rejected:
			bl.Refused++
		}
		if _, ok, err := cls.Age(r); ok && err == nil {
			bl.Stale++
		}
		b.lat.Add(r.Latency)
		if len(b.during) < maxRecoverRequests {
			b.during = append(b.during, sentClass{t: r.Time, in: slices.Contains(degradeClasses, c)})
		}
		if bl.Writes != nil {
			if rd, ok := b.reads[r.Seq]; ok {
				bl.Writes.Acknowledged++
				switch fate, _, _ := judgeRead(r, rd); fate {
				case writeOK:
					bl.Writes.OK++
				case writeLost:
					bl.Writes.Lost++
				default:
					bl.Writes.Unknown++
				}
			}
		}
		return
	}
	off := b.span.Off
	if off.IsZero() || r.Time.Before(off) || (!b.until.IsZero() && !r.Time.Before(b.until)) || len(b.after) >= maxRecoverRequests {
		return
	}
	b.after = append(b.after, sentClass{t: r.Time, in: c == Primary})
}

// result closes the bill: base is the baseline phase's latencies, nil
// when the run has none.
func (b *billAcc) result(base *latencies) Bill {
	bl := b.bill
	if b.lat.Count() > 0 {
		bl.P99 = b.lat.Percentile(99)
	}
	switch {
	case base == nil:
		bl.P99Unknown = "the run has no phase without a fault to add to"
	case base.Count() == 0:
		bl.P99Unknown = "the baseline phase has no requests"
	case b.lat.Count() == 0:
		bl.P99Unknown = "no requests were sent while the fault was on"
	default:
		d := bl.P99 - base.Percentile(99)
		bl.P99Added = &d
	}
	b.degradation(&bl)
	b.recovery(&bl)
	return bl
}

// holdsAt returns the send time of the first of sent that starts a run
// holding the class (holdRule), sorting sent by send time first.
func holdsAt(sent []sentClass) (time.Time, bool) {
	slices.SortStableFunc(sent, func(x, y sentClass) int { return x.t.Compare(y.t) })
	var h holdRule
	for _, s := range sent {
		if start, ok := h.next(s.in); ok {
			return sent[start].t, true
		}
	}
	return time.Time{}, false
}

// degradation finds, in send order, the first request sent while the
// fault was on that starts a run of holdRun requests at least HoldShare
// percent of degradeClasses: the rule of time_to_degrade.
func (b *billAcc) degradation(bl *Bill) {
	n := len(b.during)
	fallbacks := 0
	for _, s := range b.during {
		if s.in {
			fallbacks++
		}
	}
	switch {
	case n == 0:
		bl.DegradeUnknown = "no requests were sent while the fault was on"
		return
	case fallbacks == 0:
		bl.DegradeUnknown = fmt.Sprintf("none of the %d requests sent while the fault was on got a %s answer", n, classNames(degradeClasses))
		return
	case n < holdRun:
		bl.DegradeUnknown = fmt.Sprintf("%d requests were sent while the fault was on; a degradation needs at least %d", n, holdRun)
		return
	}
	at, ok := holdsAt(b.during)
	if !ok {
		bl.DegradeUnknown = fmt.Sprintf("%s answers did not hold (%d in %d, %d%% of a run of %d) in the %d requests sent while the fault was on", classNames(degradeClasses), holdRun*HoldShare/100, holdRun, HoldShare, holdRun, n)
		return
	}
	d := at.Sub(b.span.On)
	bl.DegradedIn = &d
}

// recovery finds, in send order, the first request after the fault went
// off that starts a run of holdRun requests at least HoldShare percent
// primary: the rule of time_to_recover.
func (b *billAcc) recovery(bl *Bill) {
	if b.span.Off.IsZero() {
		bl.RecoverUnknown = "the fault was still on when the run ended"
		return
	}
	if len(b.after) < holdRun {
		bl.RecoverUnknown = fmt.Sprintf("%d requests were sent after the fault ended; a recovery needs at least %d", len(b.after), holdRun)
		return
	}
	if at, ok := holdsAt(b.after); ok {
		d := at.Sub(b.span.Off)
		bl.Recovered = &d
		return
	}
	d := b.after[len(b.after)-1].t.Sub(b.span.Off)
	bl.Recovered, bl.Never = &d, true
}

// breakerTimes adds to each phase the time each sampled breaker was open
// in it and how often its state changed there. A sample's state holds
// until the next sample; the last one until the end of the last phase.
func breakerTimes(tl *timeline.Timeline, phases []PhaseMetrics) {
	names, _ := BreakerNames(tl)
	if len(names) == 0 {
		return
	}
	ph := tl.Phases()
	for _, name := range names {
		samples := BreakerSamples(tl, name)
		for i, p := range ph {
			if i >= len(phases) {
				break
			}
			bt := BreakerTime{Name: name}
			for j, s := range samples {
				end := p.End
				if j+1 < len(samples) {
					end = samples[j+1].Time
				}
				from, to := maxTime(s.Time, p.Start), minTime(end, p.End)
				if s.State == "open" && to.After(from) {
					bt.Open += to.Sub(from)
				}
				if j > 0 && samples[j-1].State != s.State && !s.Time.Before(p.Start) && s.Time.Before(p.End) {
					bt.Transitions++
				}
			}
			phases[i].Breakers = append(phases[i].Breakers, bt)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
