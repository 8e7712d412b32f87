package main

import (
	"strings"
	"testing"
	"time"
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
