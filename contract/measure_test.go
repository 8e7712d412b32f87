package contract

import "github.com/chaoskit/chaoskit/timeline"

// Measure computes a run's figures, classifying requests with cls, in one
// pass over its requests (Judge with no contracts).
func Measure(tl *timeline.Timeline, cls Classification) Measurement {
	_, m, err := Judge(tl, nil, &cls)
	if err != nil || m == nil {
		return Measurement{Start: tl.Meta.Start}
	}
	return *m
}

// findings are the findings of one kind in tl's measurement.
func findings(tl *timeline.Timeline, cls Classification, kind string) []Finding {
	var out []Finding
	for _, f := range Measure(tl, cls).Findings {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// BadAges finds the responses whose age header is there but is not a
// non-negative number of milliseconds.
func BadAges(tl *timeline.Timeline, cls Classification) []Finding {
	return findings(tl, cls, "bad_age")
}

// StatusShifts finds the routes whose share of 3xx or 4xx answers called
// primary rose in a faulted phase.
func StatusShifts(tl *timeline.Timeline, cls Classification) []Finding {
	return findings(tl, cls, "status_shift")
}
