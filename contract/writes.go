package contract

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/chaoskit/chaoskit/timeline"
)

// MaxLostWrites bounds how many lost writes a check lists.
const MaxLostWrites = 1000

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
	c     *writesCheck
	w     *window
	res   CheckResult
	done  bool
	reads map[uint64]*timeline.ReadBackResult
	lost  int
}

func (c *writesCheck) start(w *window) acc {
	a := &writesAcc{c: c, w: w, res: CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}, reads: map[uint64]*timeline.ReadBackResult{}}
	for i := range w.tl.Events {
		e := &w.tl.Events[i]
		switch {
		case e.Kind == timeline.ReadBackDone:
			a.done = true
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
	detail := readProblem(r, rd)
	if detail == "" {
		return
	}
	a.lost++
	if len(a.res.Violations) < MaxLostWrites {
		v := a.w.violation(r, k)
		v.Detail = detail
		a.res.Violations = append(a.res.Violations, v)
	}
}

func (a *writesAcc) result() CheckResult {
	res, c := a.res, a.c
	if !a.done {
		return inconclusive(res, "the run read no writes back: the scenario declares no writes, or the run stopped before the read-back")
	}
	if res.Samples == 0 {
		return inconclusive(res, "no acknowledged write in the window was read back")
	}
	res.Measured = fmt.Sprintf("%d lost of %d acknowledged", a.lost, res.Samples)
	res.Margin = margin(float64(a.lost), c.op, c.want)
	res.Outcome = outcome(compare(float64(a.lost), c.op, c.want))
	return res
}

// readProblem says what is wrong with the read-back of write w, or "".
func readProblem(w *timeline.Request, rd *timeline.ReadBackResult) string {
	switch {
	case rd.Error != "" && rd.Status == 0:
		return fmt.Sprintf("read %s failed: %s", rd.Target, rd.Error)
	case rd.Status/100 != 2:
		return fmt.Sprintf("missing: %s -> %d", rd.Target, rd.Status)
	case rd.BodySize > timeline.MaxBody:
		return ""
	}
	var ack, got map[string]any
	if err := json.Unmarshal([]byte(w.Body), &ack); err != nil {
		// An acknowledgement without a JSON object states nothing to compare.
		return ""
	}
	if err := json.Unmarshal([]byte(rd.Body), &got); err != nil {
		return fmt.Sprintf("different: %s is not a JSON object", rd.Target)
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
		return ""
	}
	return "different: " + rd.Target + ": " + strings.Join(diffs, "; ")
}
