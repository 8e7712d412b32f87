package dist

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseRoundTrip(t *testing.T) {
	for _, s := range []string{
		"200ms",
		"uniform/180ms/220ms",
		"normal/20ms/5ms",
		"lognormal/20ms/200ms",
		"histogram/10ms=90/50ms=9/1s=1",
	} {
		d, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if got := d.String(); got != s {
			t.Errorf("Parse(%q).String() = %q", s, got)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for s, want := range map[string]string{
		"soon":                   "neither a duration",
		"lognormal/200ms/20ms":   "p99 20ms is not above the median 200ms",
		"gamma/1ms/2ms":          `unknown distribution "gamma"`,
		"uniform/-1ms/2ms":       "min -1ms is negative",
		"normal/20ms":            "takes two durations",
		"histogram/10ms":         "not BOUND=WEIGHT",
		"histogram/10ms=1/5ms=":  "bad weight",
		"histogram/10ms=1/5ms=1": "not above 10ms",
		"-5ms":                   "must be above 0",
	} {
		_, err := Parse(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", s, err, want)
		}
	}
}

func TestParseHistogram(t *testing.T) {
	d, err := ParseHistogram([]byte("# latency of the payments API\n10ms 90\n\n50ms 9\n1s 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if d.String() != "histogram/10ms=90/50ms=9/1s=1" {
		t.Errorf("got %s", d)
	}
	for data, want := range map[string]string{
		"":                          "at least one bucket",
		"10ms":                      "line 1: want a bound and a weight",
		"10ms 1\nsoon 2":            `line 2: bad duration "soon"`,
		"10ms 1\n5ms 2":             "not above 10ms",
		"10ms 0":                    "weight is 0",
		manyBuckets(MaxBuckets + 1): "more than 256 buckets",
	} {
		_, err := ParseHistogram([]byte(data))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseHistogram(%.20q) = %v, want %q", data, err, want)
		}
	}
}

func manyBuckets(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString((time.Duration(i) * time.Millisecond).String() + " 1\n")
	}
	return b.String()
}

// TestRecordedQuantiles draws 5,000 delays from each distribution, records
// them as a fault does, and checks the recorded quantiles against the
// distribution the fault was given.
func TestRecordedQuantiles(t *testing.T) {
	for _, tt := range []struct {
		d    string
		want map[float64]time.Duration
	}{
		{"lognormal/20ms/200ms", map[float64]time.Duration{0.5: 20 * time.Millisecond, 0.99: 200 * time.Millisecond}},
		{"normal/100ms/10ms", map[float64]time.Duration{0.5: 100 * time.Millisecond, 0.9: 112816 * time.Microsecond}},
		{"uniform/100ms/200ms", map[float64]time.Duration{0.1: 110 * time.Millisecond, 0.9: 190 * time.Millisecond}},
		{"histogram/10ms=50/20ms=40/100ms=10", map[float64]time.Duration{0.25: 5 * time.Millisecond, 0.7: 15 * time.Millisecond, 0.95: 60 * time.Millisecond}},
		{"30ms", map[float64]time.Duration{0.01: 30 * time.Millisecond, 0.99: 30 * time.Millisecond}},
	} {
		d, err := Parse(tt.d)
		if err != nil {
			t.Fatal(err)
		}
		var r Recorder
		for i := 0; i < 5000; i++ {
			r.Record(d.Sample())
		}
		for q, want := range tt.want {
			got := r.Quantile(q)
			if math.Abs(float64(got-want)) > 0.1*float64(want) {
				t.Errorf("%s: recorded p%g = %v, want %v ±10%%", tt.d, q*100, got, want)
			}
			if exact := d.Quantile(q); math.Abs(float64(exact-want)) > 0.005*float64(want) {
				t.Errorf("%s: Quantile(%g) = %v, want %v", tt.d, q, exact, want)
			}
		}
	}
}

func TestRecorderResolution(t *testing.T) {
	var r Recorder
	for _, d := range []time.Duration{0, 500 * time.Nanosecond, 3 * time.Millisecond, 2 * time.Hour} {
		r.Record(d)
	}
	if r.Count() != 4 {
		t.Fatalf("count %d", r.Count())
	}
	if got := r.Quantile(0.75); got < 2985*time.Microsecond || got > 3015*time.Microsecond {
		t.Errorf("p75 = %v, want 3ms ±0.5%%", got)
	}
	if got := r.Quantile(1); got < 50*time.Minute {
		t.Errorf("p100 = %v, want the last bucket", got)
	}
	var empty Recorder
	if empty.Quantile(0.5) != 0 {
		t.Error("empty recorder has a quantile")
	}
}
