package inject

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pingcap/failpoint"
)

// checkTerm is the body of this package's fuzz targets (FuzzTerm for go
// test -fuzz, Fuzz for go-fuzz): the fault → failpoint term translation
// round-trips. The bytes choose a fault (the first the action, the second
// the probability in half-percents, the third the count, the rest the
// value); a fault Term accepts (and, for a raw term, CheckTerm) must give a
// term pingcap/failpoint's own
// parser takes with the probability and count in front, and which, when
// it fires, hands the marker the value Fire reads back as the same fault.
// It panics on a broken property and returns 1 for a fault Term accepts.
func checkTerm(data []byte) int {
	if len(data) < 3 {
		return 0
	}
	const point = "example.com/svc/store/query"
	f := Fault{Action: Actions[int(data[0])%len(Actions)], Probability: float64(data[1]) / 200, Count: int(int8(data[2])), Value: string(data[3:])}
	term, err := f.Term(point)
	if err != nil {
		return 0
	}
	if f.Action == Term {
		// A raw term is the user's: scenarios check it with CheckTerm.
		if CheckTerm(term) != nil {
			return 0
		}
	}
	var fps failpoint.Failpoints
	if err := fps.Enable("fuzz/term", term); err != nil {
		panic(fmt.Sprintf("%+v: term %q does not parse: %v", f, term, err))
	}
	if f.Action == Term {
		return 1
	}
	prefix := ""
	if f.Probability > 0 && f.Probability < 1 {
		prefix = strconv.FormatFloat(f.Probability*100, 'f', -1, 64) + "%"
	}
	if f.Count > 0 {
		prefix += strconv.Itoa(f.Count) + "*"
	}
	if !strings.HasPrefix(term, prefix+"return(") {
		panic(fmt.Sprintf("%+v: term %q does not start with %q", f, term, prefix+"return("))
	}
	// Without the probability the term fires at once: its value must say
	// the fault again.
	if err := fps.Enable("fuzz/term", strings.TrimPrefix(term, prefix)); err != nil {
		panic(fmt.Sprintf("%+v: term %q without its modifiers does not parse: %v", f, term, err))
	}
	v, err := fps.Eval("fuzz/term")
	if err != nil {
		panic(fmt.Sprintf("%+v: term %q does not fire: %v", f, term, err))
	}
	s, _ := v.(string)
	at, body, _ := strings.Cut(s, pointSep)
	want := map[Action]string{Timeout: valueTimeout, Error: prefixError + f.Value, Panic: prefixPanic + f.Value, Status: prefixStatus + f.Value}[f.Action]
	switch {
	case f.Action == Error && f.Value == "":
		want = prefixError + DefaultErrorMessage
	case f.Action == Panic && f.Value == "":
		want = prefixPanic + "injected panic"
	case f.Action == Latency:
		d, _ := time.ParseDuration(f.Value)
		want = prefixDelay + d.String()
	case f.Action == Status:
		code, _ := strconv.Atoi(f.Value)
		want = prefixStatus + strconv.Itoa(code)
	}
	if at != point || body != want {
		panic(fmt.Sprintf("%+v: term %q hands the marker %q, want %q", f, term, s, point+pointSep+want))
	}
	return 1
}
