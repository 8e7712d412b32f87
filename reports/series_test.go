package reports

import (
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/contract"
	"github.com/chaoskit/chaoskit/timeline"
)

// The series of shopTimeline: 100 ms buckets over its 10 s, the requests
// of each bucket by class with their latencies, and the breaker band from
// the state samples, or from the response header without them.
func TestSeries(t *testing.T) {
	var s ScenarioReport
	measureInto(&s, shopTimeline())
	ser := s.Series
	if ser.Bucket != 100*time.Millisecond || ser.End != 10*time.Second || len(ser.Buckets) != 101 {
		t.Fatalf("series bucket %v end %v n %d", ser.Bucket, ser.End, len(ser.Buckets))
	}
	// 3.0-3.1s: the first tenth of the fault, erring slowly.
	if b := ser.Buckets[30]; b.At != 3*time.Second || b.Requests != 10 || b.Classes[contract.Rejected]+b.Classes[contract.Error]+b.Classes[contract.Timeout] != 10 || b.P50 < 100*time.Millisecond {
		t.Errorf("bucket 30 = %+v", b)
	}
	// 4.0-4.1s: served from the cache.
	if b := ser.Buckets[40]; b.Requests != 10 || b.Classes[contract.Fallback] != 10 || b.P99 > 50*time.Millisecond {
		t.Errorf("bucket 40 = %+v", b)
	}
	want := []StateSpan{{0, 3300 * time.Millisecond, "closed"}, {3300 * time.Millisecond, 8 * time.Second, "open"},
		{8 * time.Second, 8200 * time.Millisecond, "half-open"}, {8200 * time.Millisecond, 10 * time.Second, "closed"}}
	if len(ser.Breakers) != 1 || ser.Breakers[0].Name != "db" || ser.Breakers[0].From != "state samples" || !equalSpans(ser.Breakers[0].Spans, want) {
		t.Errorf("bands = %+v", ser.Breakers)
	}

	tl := shopTimeline()
	kept := tl.Events[:0]
	for _, e := range tl.Events {
		if e.Kind != timeline.State {
			kept = append(kept, e)
		}
	}
	tl.Events = kept
	measureInto(&s, tl)
	bands := s.Series.Breakers
	if len(bands) != 1 || bands[0].From != "response header" || len(bands[0].Spans) != 3 || bands[0].Spans[1].State != "open" ||
		bands[0].Spans[1].From < 3300*time.Millisecond || bands[0].Spans[2].From < 8*time.Second {
		t.Errorf("header bands = %+v", bands)
	}
}

func equalSpans(a, b []StateSpan) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
