package dist

import (
	"math"
	"sync/atomic"
	"time"
)

// Recorder counts the delays a fault applied, in buckets 1 % wide from 1µs
// to about an hour (shorter delays count as 1µs, longer as the last
// bucket), so a quantile read back is within half a percent of the delays'
// own, in a fixed 18 KiB whatever the count. It is safe for concurrent use.
type Recorder struct {
	counts [recorderBuckets]atomic.Int64
	n      atomic.Int64
}

const (
	recorderRatio   = 1.01
	recorderBuckets = 2200 // 1µs·1.01^2200 ≈ 3.2·10^9µs ≈ 53min
)

var logRatio = math.Log(recorderRatio)

// Record counts one applied delay.
func (r *Recorder) Record(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	i := 0
	if us > 1 {
		i = int(math.Log(us) / logRatio)
		if i >= recorderBuckets {
			i = recorderBuckets - 1
		}
	}
	r.counts[i].Add(1)
	r.n.Add(1)
}

// Count returns how many delays were recorded.
func (r *Recorder) Count() int64 { return r.n.Load() }

// Quantile returns the q-quantile (q in [0,1]) of the recorded delays, the
// geometric middle of its bucket; 0 when none was recorded.
func (r *Recorder) Quantile(q float64) time.Duration {
	n := r.n.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i := range r.counts {
		seen += r.counts[i].Load()
		if seen >= rank {
			us := math.Pow(recorderRatio, float64(i)+0.5)
			return time.Duration(us * float64(time.Microsecond))
		}
	}
	return time.Duration(math.Pow(recorderRatio, recorderBuckets) * float64(time.Microsecond))
}
