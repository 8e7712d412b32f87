package suggest

import "testing"

func TestHint(t *testing.T) {
	for _, tt := range []struct {
		s       string
		choices []string
		want    string
	}{
		{"timout", []string{"timeout", "error", "latency"}, `did you mean "timeout"?`},
		{"LATENCY", []string{"timeout", "latency"}, `did you mean "latency"?`},
		{"zzz", []string{"timeout", "error"}, "choose one of timeout, error"},
		{"x", nil, ""},
	} {
		if got := Hint(tt.s, tt.choices); got != tt.want {
			t.Errorf("Hint(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
