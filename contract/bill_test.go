package contract

import (
	"strings"
	"testing"
	"time"
)

// TestHoldRule: the first request that starts a run of 10 with at least
// 9 in the class, and only a request in the class starts one.
func TestHoldRule(t *testing.T) {
	for _, tt := range []struct {
		seq   string // + in the class, - not
		start int    // -1: never holds
	}{
		{"++++++++++", 0},
		{"+++++++++", -1},
		{"-++++++++++", 1},
		{"+-+++++++++", 0}, // 9 of 10, starting in the class
		{"-+++++++++-", 1}, // 9 of 10 again, one request later
		{"--+-+++++++++", 2},
		{"-----++++++++++", 5},
		{"+-+-+-+-+-+-+-+-+-+-+-+-", -1},
		{"++-++-++-++-++-++-++-", -1}, // two in three
		{"", -1},
	} {
		var h holdRule
		got := -1
		for _, c := range tt.seq {
			if start, ok := h.next(c == '+'); ok {
				got = start
				break
			}
		}
		if got != tt.start {
			t.Errorf("%q: holds from %d, want %d", tt.seq, got, tt.start)
		}
	}
}

// TestBillDegradation: the time from the fault's start to the first
// request, in send order, of a run of fallback answers that holds, or
// unknown with the reason.
func TestBillDegradation(t *testing.T) {
	on := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	// sent makes one request every 10 ms from the fault's start: + a
	// fallback answer, - any other; listed in the order given, which the
	// bill puts back in send order.
	sent := func(seq string, order []int) []sentClass {
		out := make([]sentClass, len(seq))
		for i, c := range seq {
			out[i] = sentClass{t: on.Add(time.Duration(i) * 10 * time.Millisecond), in: c == '+'}
		}
		if order != nil {
			re := make([]sentClass, len(order))
			for i, j := range order {
				re[i] = out[j]
			}
			out = re
		}
		return out
	}
	all := strings.Repeat("+", 40)
	for _, tt := range []struct {
		name   string
		during []sentClass
		want   time.Duration // 0 with why: unknown
		why    string
	}{
		{"fallback at once", sent(all, nil), 0, ""},
		{"three errors first", sent("---"+all, nil), 30 * time.Millisecond, ""},
		{"one stray error later", sent("--+-"+all, nil), 20 * time.Millisecond, ""},
		// Completion order is not send order: the slow errors complete
		// last, and still come first.
		{"errors complete last", sent("---++++++++++++", []int{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 1, 2}), 30 * time.Millisecond, ""},
		{"no requests", nil, 0, "no requests were sent while the fault was on"},
		{"no fallback answer", sent("------------", nil), 0, "none of the 12 requests sent while the fault was on got a fallback answer"},
		{"too few", sent("+++++", nil), 0, "5 requests were sent while the fault was on; a degradation needs at least 10"},
		{"never holds", sent("+-+-+-+-+-+-+-+-+-+-", nil), 0, "fallback answers did not hold (9 in 10, 90% of a run of 10) in the 20 requests"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := &billAcc{span: FaultSpan{Point: "db/timeout", On: on, Off: on.Add(time.Second)}, during: tt.during}
			var bl Bill
			b.degradation(&bl)
			if tt.why != "" {
				if bl.DegradedIn != nil || !strings.Contains(bl.DegradeUnknown, tt.why) {
					t.Errorf("degraded in %v (%q), want unknown: %s", bl.DegradedIn, bl.DegradeUnknown, tt.why)
				}
				return
			}
			if bl.DegradedIn == nil || *bl.DegradedIn != tt.want || bl.DegradeUnknown != "" {
				t.Errorf("degraded in %v (%q), want %v", bl.DegradedIn, bl.DegradeUnknown, tt.want)
			}
		})
	}
}

// TestBillString shows the time to degrade between the p99 added and the
// recovery.
func TestBillString(t *testing.T) {
	p99, deg, rec := 860*time.Millisecond, 12*time.Millisecond, 1200*time.Millisecond
	b := Bill{Requests: 412, Failed: 41, P99Added: &p99, DegradedIn: &deg, Recovered: &rec}
	want := "41 of 412 requests failed, 0 degraded, 0 stale, 0 refused; p99 +860ms; degraded in 12ms; recovered in 1.2s"
	if got := b.String(); got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
	b.DegradedIn = nil
	if got := b.String(); strings.Contains(got, "degraded in") {
		t.Errorf("a bill with no time to degrade says one: %s", got)
	}
}
