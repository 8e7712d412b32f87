package plan

import (
	"fmt"
)

// MaxRate is the highest request rate a phase may plan, in requests per
// second, after --rate-scale. One machine sends at most some hundreds of
// thousands of HTTP requests a second over loopback (vegeta, a tiny
// response, every core busy); a plan above a million a second cannot be
// attempted at all, so it is a slip (a 1000000000/s typed for 1000/s)
// rather than a plan, and the run could only report how little of it was
// sent. The ceiling is far above any rate a real scenario asks for, so it
// never refuses one.
const MaxRate = 1_000_000

// checkRateScale refuses a --rate-scale factor that is not a finite number
// above 0 (0 means unset: rates as written).
// minRateScale and MaxRateScale bound --rate-scale: past them a phase's
// duration or rate is no longer a number a run can keep (a 2s phase
// scaled by 1e-300 lasts 0s).
const (
	minRateScale = 1e-4
	MaxRateScale = 1e6
)

func checkRateScale(f float64) *Error {
	if f == 0 || (f >= minRateScale && f <= MaxRateScale) {
		return nil
	}
	return &Error{File: "--rate-scale", Msg: fmt.Sprintf("factor %v is not a number from %v to %v", f, minRateScale, MaxRateScale), Hint: "give a factor such as 0.5 or 2"}
}

// peakRate returns the highest rate, in requests per second, a load asks
// for at any moment.
func (l Load) peakRate() float64 {
	peak := l.Rate.PerSecond()
	if p := l.Pacer; p != nil {
		if p.Linear != nil {
			peak = max(peak, p.Linear.From.PerSecond(), p.Linear.To.PerSecond())
		}
		if p.Sine != nil {
			peak = max(peak, p.Sine.Mean.PerSecond()+p.Sine.Amplitude.PerSecond())
		}
		for _, s := range p.Steps {
			peak = max(peak, s.Rate.PerSecond())
		}
	}
	return peak
}
