package contract

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/timeline"
)

// VerifyCounts are the outcomes of the verification requests sent for the
// window's requests: OK (the answer says the invariant holds), Violated
// (a decisive answer says it does not: fail) and Unknown (no answer could
// tell: 401, 403, 408, 425, 429, a 5xx, no answer after the retries, or a
// request that could not be made). Causes names each unknown's cause with
// how many it left unknown ("answered 503", "no answer").
type VerifyCounts struct {
	Verified int            `json:"verified"`
	OK       int            `json:"ok"`
	Violated int            `json:"violated"`
	Unknown  int            `json:"unknown"`
	Causes   map[string]int `json:"unknown_causes,omitempty"`
}

// String is "1 violated, 2 unknown, 40 ok of 43 verified".
func (c VerifyCounts) String() string {
	return fmt.Sprintf("%d violated, %d unknown, %d ok of %d verified", c.Violated, c.Unknown, c.OK, c.Verified)
}

// verifyCheck is `violated_verifications == 0`: every verification
// request chaoskit sent after the last phase, for a request of the
// window the scenario's verify: rules select, got the answer its rule
// expects. The runner sends and records them (timeline.Verify); this
// check only judges them, on both ends of what is known, as lost_writes
// is.
type verifyCheck struct {
	src      string
	op       string
	want     float64
	wantText string
}

type verifyAcc struct {
	c       *verifyCheck
	w       *window
	res     CheckResult
	done    bool
	notSent int
	results map[uint64]*timeline.VerifyResult
	counts  VerifyCounts
}

func (c *verifyCheck) start(w *window) acc {
	a := &verifyAcc{c: c, w: w, res: CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}, results: map[uint64]*timeline.VerifyResult{}}
	for i := range w.tl.Events {
		e := &w.tl.Events[i]
		switch {
		case e.Kind == timeline.VerifyDone:
			a.done = true
			if n, ok := timeline.Number(e.Data[timeline.NotVerified]); ok {
				a.notSent += int(n)
			}
		case e.Kind == timeline.Verify && e.Verified != nil:
			if _, dup := a.results[e.Verified.Request]; !dup {
				a.results[e.Verified.Request] = e.Verified
			}
		}
	}
	return a
}

func (a *verifyAcc) add(r *timeline.Request, in bool, k *classed) {
	if !in || !a.done {
		return
	}
	vr, ok := a.results[r.Seq]
	if !ok {
		return
	}
	a.res.Samples++
	a.counts.Verified++
	outcome, cause, detail := judgeVerify(vr)
	switch outcome {
	case verifyOK:
		a.counts.OK++
		return
	case verifyViolated:
		a.counts.Violated++
	default:
		a.counts.Unknown++
		if a.counts.Causes == nil {
			a.counts.Causes = map[string]int{}
		}
		a.counts.Causes[cause]++
		detail = "unknown: " + detail
	}
	if len(a.res.Violations) < maxLostWrites {
		v := a.w.violation(r, k)
		v.Detail = detail
		a.res.Violations = append(a.res.Violations, v)
	}
}

func (a *verifyAcc) result() CheckResult {
	res, c, n := a.res, a.c, a.counts
	if !a.done {
		return inconclusive(res, "the run sent no verification requests: the scenario declares no verify rules, or the run stopped before them")
	}
	if a.notSent > 0 {
		// Requests past the runner's bound were never verified: their
		// outcome is unknown, and they may be in any window.
		n.Unknown += a.notSent
		n.Verified += a.notSent
		if n.Causes == nil {
			n.Causes = map[string]int{}
		}
		n.Causes["not verified"] += a.notSent
	}
	res.Verified = &n
	if n.Verified == 0 {
		return inconclusive(res, "no request of the window was verified: the verify rules selected none")
	}
	res.Measured = n.String()
	lo, hi := float64(n.Violated), float64(n.Violated+n.Unknown)
	okLo, okHi := compare(lo, c.op, c.want), compare(hi, c.op, c.want)
	res.measured(lo, c.op, c.want, UnitCount)
	res.Margin = margin(hi, c.op, c.want)
	switch {
	case okLo && okHi:
		res.Outcome = Pass
	case !okLo && !okHi:
		res.Outcome = Fail
		res.Margin = margin(lo, c.op, c.want)
	default:
		res.Outcome = Inconclusive
		res.Reason = fmt.Sprintf("%d of %d verifications are unknown (%s): no answer could tell whether the invariant holds, so violated_verifications is between %d and %d",
			n.Unknown, n.Verified, causeText(n.Causes), n.Violated, n.Violated+n.Unknown)
		if n.Causes["answered 401"]+n.Causes["answered 403"] > 0 {
			res.Reason += "; a verification refused with 401 or 403 needs headers (e.g. Authorization)"
		}
	}
	return res
}

// causeText lists causes, the most common first: "answered 503: 4, no
// answer: 1".
func causeText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// The outcomes of a verification.
type verifyOutcome int

const (
	verifyOK verifyOutcome = iota
	verifyViolated
	verifyUnknown
)

// judgeVerify decides the outcome of one verification from its last
// answer: ok when its status is one the rule expects (and the body holds
// body_contains); unknown when no answer could tell (none came, the
// request could not be made, or 401, 403, 408, 425, 429 or a 5xx, which
// say nothing of the invariant); else violated.
func judgeVerify(vr *timeline.VerifyResult) (outcome verifyOutcome, cause, detail string) {
	tries := ""
	if vr.Attempts > 1 {
		tries = fmt.Sprintf(" after %d tries over %s", vr.Attempts, fmtDur(vr.Elapsed))
	}
	expected := false
	for _, s := range vr.Expect {
		if r, err := ParseStatus(s); err == nil && r.Has(vr.Status) {
			expected = true
		}
	}
	switch {
	case vr.Attempts == 0 && vr.Status == 0:
		return verifyUnknown, "could not be sent", fmt.Sprintf("%s: %s could not be sent: %s", vr.Rule, vr.Target, vr.Error)
	case vr.Status == 0:
		return verifyUnknown, "no answer", fmt.Sprintf("%s: %s got no answer%s: %s", vr.Rule, vr.Target, tries, vr.Error)
	case expected && vr.BodyContains != "" && vr.BodySize > timeline.MaxBody:
		return verifyUnknown, "answer too large to check", fmt.Sprintf("%s: %s answered %d bytes, more than the %d a run keeps", vr.Rule, vr.Target, vr.BodySize, timeline.MaxBody)
	case expected && vr.BodyContains != "" && !strings.Contains(vr.Body, vr.BodyContains):
		return verifyViolated, "", fmt.Sprintf("%s: %s -> %d without %q in its body", vr.Rule, vr.Target, vr.Status, vr.BodyContains)
	case expected:
		return verifyOK, "", ""
	case undecided(vr.Status):
		return verifyUnknown, "answered " + strconv.Itoa(vr.Status), fmt.Sprintf("%s: %s -> %d %s%s", vr.Rule, vr.Target, vr.Status, http.StatusText(vr.Status), tries)
	}
	return verifyViolated, "", fmt.Sprintf("%s: %s -> %d, want %s", vr.Rule, vr.Target, vr.Status, strings.Join(vr.Expect, " or "))
}

// undecided reports whether an answer says nothing of what the service
// holds: the request was refused (401, 403, 429), timed out (408), came
// too early (425) or met a server error.
func undecided(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return status/100 == 5
}
