package inject

import (
	"strconv"
	"testing"
)

func TestDecodeRoundTripsTerms(t *testing.T) {
	for _, f := range []Fault{{Action: Timeout}, {Action: Error, Value: "db | down"}, {Action: Latency, Value: "250ms"}, {Action: Panic, Value: "boom"}, {Action: Status, Value: "503"}} {
		term, err := f.Term(pt)
		if err != nil {
			t.Fatal(err)
		}
		// The value a marker receives is the term's quoted argument.
		v := term[len(`return("`) : len(term)-2]
		v = unquote(t, `"`+v+`"`)
		point, got, ok := Decode(v)
		if !ok || point != pt || got.Action != f.Action || got.Value != f.Value {
			t.Errorf("Decode(%q) = %q %+v %v, want %+v", v, point, got, ok, f)
		}
	}
	for _, v := range []any{nil, 7, "plain"} {
		if _, _, ok := Decode(v); ok {
			t.Errorf("Decode(%v) claims a fault", v)
		}
	}
	before := Hits()[pt]
	CountHit(pt + "|latency:1ms")
	if Hits()[pt] != before+1 {
		t.Error("CountHit did not count")
	}
}

func unquote(t *testing.T, s string) string {
	t.Helper()
	u, err := strconv.Unquote(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
