package contract

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/chaoskit/chaoskit/timeline"
)

// maxLostWrites bounds how many lost and unknown writes a check lists.
const maxLostWrites = 1000

// WriteCounts are the fates of the acknowledged writes in a window, in
// Jepsen's terms: OK (read back and equal: Jepsen's ok), Lost (a read that
// succeeded shows it missing or different: fail) and Unknown (no read
// could tell: info). Unknown names each cause with how many writes it
// left unknown ("401", "503", "no answer").
type WriteCounts struct {
	Acknowledged int            `json:"acknowledged"`
	OK           int            `json:"ok"`
	Lost         int            `json:"lost"`
	Unknown      int            `json:"unknown"`
	Causes       map[string]int `json:"unknown_causes,omitempty"`
}

// String is "1 lost, 2 unknown, 225 ok of 228 acknowledged".
func (c WriteCounts) String() string {
	return fmt.Sprintf("%d lost, %d unknown, %d ok of %d acknowledged", c.Lost, c.Unknown, c.OK, c.Acknowledged)
}

// causes lists the unknown causes, the most common first: "answered
// 503: 4, no answer: 1".
func (c WriteCounts) causes() string {
	keys := make([]string, 0, len(c.Causes))
	for k := range c.Causes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c.Causes[keys[i]] != c.Causes[keys[j]] {
			return c.Causes[keys[i]] > c.Causes[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, c.Causes[k])
	}
	return strings.Join(parts, ", ")
}

// writesCheck is `lost_writes == 0`: every write the service acknowledged
// in the window, read back after the run with every fault off, is there and
// equal to what the acknowledgement said. The runner records the reads
// (timeline.ReadBack); this check only judges them.
type writesCheck struct {
	src      string
	op       string
	want     float64
	wantText string
}

// writesAcc judges, as the window's writes stream past, the read-back
// recorded for each (the read-backs are events, held).
type writesAcc struct {
	c       *writesCheck
	w       *window
	res     CheckResult
	done    bool
	notRead int
	reads   map[uint64]*timeline.ReadBackResult
	counts  WriteCounts
}

func (c *writesCheck) start(w *window) acc {
	a := &writesAcc{c: c, w: w, res: CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}, reads: map[uint64]*timeline.ReadBackResult{}}
	for i := range w.tl.Events {
		e := &w.tl.Events[i]
		switch {
		case e.Kind == timeline.ReadBackDone:
			a.done = true
			if n, ok := timeline.Number(e.Data[timeline.NotReadBack]); ok {
				a.notRead += int(n)
			}
		case e.Kind == timeline.ReadBack && e.Read != nil:
			if _, dup := a.reads[e.Read.Write]; !dup {
				a.reads[e.Read.Write] = e.Read
			}
		}
	}
	return a
}

func (a *writesAcc) add(r *timeline.Request, in bool, k *classed) {
	if !in || !a.done {
		return
	}
	rd, ok := a.reads[r.Seq]
	if !ok {
		return
	}
	a.res.Samples++
	a.counts.Acknowledged++
	fate, cause, detail := judgeRead(r, rd)
	switch fate {
	case writeOK:
		a.counts.OK++
		return
	case writeLost:
		a.counts.Lost++
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

func (a *writesAcc) result() CheckResult {
	res, c, n := a.res, a.c, a.counts
	if !a.done {
		return inconclusive(res, "the run read no writes back: the scenario declares no writes, or the run stopped before the read-back")
	}
	if a.notRead > 0 {
		// Writes past the runner's bound were never read: their fate is
		// unknown, and they may be in any window.
		n.Unknown += a.notRead
		n.Acknowledged += a.notRead
		if n.Causes == nil {
			n.Causes = map[string]int{}
		}
		n.Causes["not read back"] += a.notRead
	}
	res.Writes = &n
	if n.Acknowledged == 0 {
		return inconclusive(res, "no acknowledged write in the window was read back")
	}
	res.Measured = n.String()
	// Lost writes are at least Lost and at most Lost + Unknown: the
	// verdict is decided only when both ends agree.
	lo, hi := float64(n.Lost), float64(n.Lost+n.Unknown)
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
		res.Reason = fmt.Sprintf("%d of %d acknowledged writes are unknown (%s): no read could tell whether they are there, so lost_writes is between %d and %d",
			n.Unknown, n.Acknowledged, n.causes(), n.Lost, n.Lost+n.Unknown)
		if n.Causes["answered 401"]+n.Causes["answered 403"] > 0 {
			res.Reason += "; a read-back refused with 401 or 403 needs read_headers (e.g. Authorization)"
		}
	}
	return res
}

// The fates of a write.
type writeFate int

const (
	writeOK writeFate = iota
	writeLost
	writeUnknown
)

// judgeRead decides the fate of write w from its read-back: lost when a
// read that succeeded shows it missing (a missing status, 404 and 410 by
// default) or different (a compared field differs, or is absent from a
// JSON object read); unknown when no read could tell (no answer, a status
// that says nothing of the write, a body that cannot be compared); else
// ok. cause names an unknown's cause for the counts, detail says it for
// the evidence.
func judgeRead(w *timeline.Request, rd *timeline.ReadBackResult) (fate writeFate, cause, detail string) {
	tries := ""
	if rd.Attempts > 1 {
		tries = fmt.Sprintf(" after %d tries over %s", rd.Attempts, fmtDur(rd.Elapsed))
	}
	switch {
	case rd.Attempts == 0 && rd.Status == 0:
		return writeUnknown, "could not be read", fmt.Sprintf("%s could not be read: %s", rd.Target, rd.Error)
	case rd.Status == 0:
		return writeUnknown, "no answer", fmt.Sprintf("%s got no answer%s: %s", rd.Target, tries, rd.Error)
	case missingStatus(rd, rd.Status):
		return writeLost, "", fmt.Sprintf("missing: %s -> %d", rd.Target, rd.Status)
	case rd.Status/100 != 2:
		cause := "answered " + strconv.Itoa(rd.Status)
		return writeUnknown, cause, fmt.Sprintf("%s -> %d %s%s", rd.Target, rd.Status, http.StatusText(rd.Status), tries)
	case rd.BodySize > timeline.MaxBody:
		return writeUnknown, "read too large to compare", fmt.Sprintf("%s answered %d bytes, more than the %d a run keeps to compare", rd.Target, rd.BodySize, timeline.MaxBody)
	}
	var ack, got map[string]any
	if err := json.Unmarshal([]byte(w.Body), &ack); err != nil {
		if len(rd.Compare) > 0 {
			return writeUnknown, "acknowledgement not JSON", fmt.Sprintf("the acknowledgement is not a JSON object, so %s cannot be compared", strings.Join(rd.Compare, ", "))
		}
		// An acknowledgement without a JSON object states nothing to
		// compare: the write is there.
		return writeOK, "", ""
	}
	if err := json.Unmarshal([]byte(rd.Body), &got); err != nil {
		return writeUnknown, "read not JSON", fmt.Sprintf("%s answered %d with a body that is not a JSON object", rd.Target, rd.Status)
	}
	fields := rd.Compare
	if len(fields) == 0 {
		for k := range ack {
			fields = append(fields, k)
		}
		sort.Strings(fields)
	}
	var diffs []string
	for _, f := range fields {
		a, aok := walkJSON(ack, f)
		g, gok := walkJSON(got, f)
		switch {
		case !aok:
			continue
		case !gok:
			diffs = append(diffs, fmt.Sprintf("%s: acknowledged %s, read nothing", f, jsonText(a)))
		case !reflect.DeepEqual(a, g):
			diffs = append(diffs, fmt.Sprintf("%s: acknowledged %s, read %s", f, jsonText(a), jsonText(g)))
		}
	}
	if len(diffs) == 0 {
		return writeOK, "", ""
	}
	return writeLost, "", "different: " + rd.Target + ": " + strings.Join(diffs, "; ")
}

// missingStatus reports whether status says the write is not there, by
// the read's missing statuses (404 and 410 when it names none).
func missingStatus(rd *timeline.ReadBackResult, status int) bool {
	if len(rd.Missing) == 0 {
		return status == http.StatusNotFound || status == http.StatusGone
	}
	for _, s := range rd.Missing {
		if r, err := ParseStatus(s); err == nil && r.Has(status) {
			return true
		}
	}
	return false
}
