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

func (c *writesCheck) evaluate(w *window) CheckResult {
	res := CheckResult{Expect: c.src, Expected: c.op + " " + c.wantText}
	done := false
	var reads []*timeline.ReadBackResult
	for i := range w.tl.Events {
		e := &w.tl.Events[i]
		switch {
		case e.Kind == timeline.ReadBackDone:
			done = true
		case e.Kind == timeline.ReadBack && e.Read != nil:
			reads = append(reads, e.Read)
		}
	}
	if !done {
		return inconclusive(res, "the run read no writes back: the scenario declares no writes, or the run stopped before the read-back")
	}
	inWindow := make(map[uint64]int, len(w.reqs))
	for i := range w.reqs {
		inWindow[w.reqs[i].Seq] = i
	}
	sort.SliceStable(reads, func(i, j int) bool { return reads[i].Write < reads[j].Write })
	lost := 0
	for _, rd := range reads {
		i, ok := inWindow[rd.Write]
		if !ok {
			continue
		}
		res.Samples++
		detail := readProblem(&w.reqs[i], rd)
		if detail == "" {
			continue
		}
		lost++
		if len(res.Violations) < MaxLostWrites {
			v := w.violation(i)
			v.Detail = detail
			res.Violations = append(res.Violations, v)
		}
	}
	if res.Samples == 0 {
		return inconclusive(res, "no acknowledged write in the window was read back")
	}
	res.Measured = fmt.Sprintf("%d lost of %d acknowledged", lost, res.Samples)
	res.Margin = margin(float64(lost), c.op, c.want)
	res.Outcome = outcome(compare(float64(lost), c.op, c.want))
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
