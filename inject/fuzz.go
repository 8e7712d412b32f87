package inject

import (
	"context"
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
	want, err := markerValue(f)
	if err != nil {
		panic(fmt.Sprintf("%+v: %v", f, err))
	}
	if s != point+pointSep+want {
		panic(fmt.Sprintf("%+v: term %q hands the marker %q, want %q", f, term, s, point+pointSep+want))
	}
	// What the marker reads back is the same fault.
	switch got := fireNow(v).(type) {
	case *GRPCStatusError:
		code, msg, _ := ParseGRPCStatus(f.Value)
		if f.Action != GRPC || got.Code != code || got.Message != msg {
			panic(fmt.Sprintf("%+v: the marker reads %v, want code %d message %q", f, got, code, msg))
		}
	case *StatusError:
		if code, _ := strconv.Atoi(f.Value); f.Action != Status || got.Code != code {
			panic(fmt.Sprintf("%+v: the marker reads %v, want status %d", f, got, code))
		}
	}
	return 1
}

// markerValue is the value, after the failpoint's path, that the term of f
// must hand its marker. Its switch names every action, so that an action
// added to Actions without a case here fails the fuzz check at its first
// input instead of comparing against an empty expectation.
func markerValue(f Fault) (string, error) {
	switch f.Action {
	case Timeout:
		return valueTimeout, nil
	case Error:
		if f.Value == "" {
			return prefixError + DefaultErrorMessage, nil
		}
		return prefixError + f.Value, nil
	case Latency:
		d, _ := time.ParseDuration(f.Value)
		return prefixDelay + d.String(), nil
	case Panic:
		if f.Value == "" {
			return prefixPanic + "injected panic", nil
		}
		return prefixPanic + f.Value, nil
	case Status:
		code, _ := strconv.Atoi(f.Value)
		return prefixStatus + strconv.Itoa(code), nil
	case GRPC:
		code, msg, err := ParseGRPCStatus(f.Value)
		if err != nil {
			return "", err
		}
		return prefixGRPC + strconv.FormatUint(uint64(code), 10) + ":" + msg, nil
	}
	return "", fmt.Errorf("the fuzz check has no expected marker value for action %q", f.Action)
}

// fireNow runs Fire on v for the actions that answer at once (error,
// status, grpc) and returns nil for the others, which wait or panic.
func fireNow(v any) error {
	s, _ := v.(string)
	_, body, _ := strings.Cut(s, pointSep)
	if !strings.HasPrefix(body, prefixError) && !strings.HasPrefix(body, prefixStatus) && !strings.HasPrefix(body, prefixGRPC) {
		return nil
	}
	return Fire(context.Background(), v)
}
