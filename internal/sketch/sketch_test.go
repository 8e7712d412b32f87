package sketch

import (
	"slices"
	"testing"
	"time"
)

func TestNearest(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 1000; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{50: 500, 90: 900, 99: 990, 99.9: 999, 100: 1000, 0.01: 1} {
		if got := Nearest(d, p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if Nearest(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
}

func TestLatencySketchBound(t *testing.T) {
	// Past Exact the sketch answers within its stated bound.
	l := New(Exact, Digits)
	var exact []time.Duration
	for i := range 100_000 {
		d := time.Duration(1000+(i*7919)%5_000_000) * time.Nanosecond * 3
		l.Add(d)
		exact = append(exact, d)
	}
	if l.hist == nil {
		t.Fatal("the sketch never took over")
	}
	slices.Sort(exact)
	for _, p := range []float64{50, 90, 99, 99.9, 100} {
		want, got := Nearest(exact, p), l.Percentile(p)
		if got < want || float64(got-want) > float64(want)/1024+1 {
			t.Errorf("p%v: sketch %v, exact %v: outside [exact, exact·(1+1/1024)]", p, got, want)
		}
	}
}
