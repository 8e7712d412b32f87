package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/internal/exitcode"
)

func TestCheckStartAt(t *testing.T) {
	now := time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(time.Minute), ""},
		{now.Add(-time.Second), "passed 1s ago"},
		{now.AddDate(100, 0, 0), "ahead, more than 24h0m0s: check the date"},
	} {
		err := checkStartAt(tt.at, now)
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkStartAt(%v) = %v, want %q", tt.at, err, tt.want)
		}
	}
}

// TestStartAtFlagIsChecked: the check is made where run reads the flag, so
// a --start-at that has passed or lies a year ahead is refused (exit 2)
// before anything runs, and one a minute ahead is taken.
func TestStartAtFlagIsChecked(t *testing.T) {
	now := time.Now().UTC()
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(time.Minute), ""},
		{now.Add(-time.Hour), "passed"},
		{now.AddDate(1, 0, 0), "check the date"},
	} {
		f := &runFlags{startAt: tt.at.Format(time.RFC3339)}
		o, err := f.shardOptions()
		if tt.want == "" {
			if err != nil || o.StartAt.IsZero() {
				t.Errorf("--start-at %s: %v, start %v; want it taken", f.startAt, err, o.StartAt)
			}
			continue
		}
		if exitcode.Of(err) != exitcode.Invalid || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--start-at %s: %v (exit %d), want exit 2 saying %q", f.startAt, err, exitcode.Of(err), tt.want)
		}
	}
}
