package contract

import (
	"fmt"
	"slices"
	"time"
)

// Gaps in samples. A figure read from samples (metrics, state) knows only
// the moments it was sampled at. When the samples leave a long stretch of
// the window uncovered — the endpoint did not answer, the target was down —
// a gauge's peak or a breaker's opening may lie in it unseen, and a
// counter's growth after the last sample is missed: the figure could pass
// on what it did not see. So a gap longer than a quarter of the window (and
// than three sampling intervals) makes the expectation inconclusive.

// sampleGap returns the longest stretch of [start, end] the sample times
// leave uncovered, and where it begins. A sample at or before start covers
// the window's start.
func sampleGap(times []time.Time, start, end time.Time) (gap time.Duration, from time.Time) {
	prev := start
	covered := false
	for _, t := range times {
		if !t.After(start) {
			covered = true
			continue
		}
		if t.After(end) {
			break
		}
		if d := t.Sub(prev); d > gap {
			gap, from = d, prev
		}
		prev = t
	}
	if !covered && len(times) == 0 {
		return end.Sub(start), start
	}
	if d := end.Sub(prev); d > gap {
		gap, from = d, prev
	}
	return gap, from
}

// gapReason says why the sample times cannot judge [start, end], or "":
// a gap longer than a quarter of the window and than three times the
// median interval between samples.
func gapReason(what string, times []time.Time, start, end time.Time) string {
	return gapReasonEvery(what, times, start, end, 0)
}

// gapReasonEvery is gapReason for samples asked for every interval (a
// Prometheus server's step); 0 takes the median interval of times.
func gapReasonEvery(what string, times []time.Time, start, end time.Time, every time.Duration) string {
	span := end.Sub(start)
	gap, from := sampleGap(times, start, end)
	if every <= 0 {
		every = medianInterval(times)
	}
	limit := max(span/4, 3*every)
	if gap <= limit {
		return ""
	}
	return fmt.Sprintf("%s leave a gap of %s (from +%s) in the %s window, more than a quarter of it: the endpoint did not answer or the target was down, and what happened then is unknown",
		what, fmtDur(gap), fmtDur(from.Sub(start)), fmtDur(span))
}

// medianInterval is the median time between consecutive samples.
func medianInterval(times []time.Time) time.Duration {
	if len(times) < 2 {
		return 0
	}
	d := make([]time.Duration, 0, len(times)-1)
	for i := 1; i < len(times); i++ {
		d = append(d, times[i].Sub(times[i-1]))
	}
	slices.Sort(d)
	return d[len(d)/2]
}
