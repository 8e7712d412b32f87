package faultbuild

import "testing"

func TestRewriteFailed(t *testing.T) {
	for out, want := range map[string]bool{
		"": false,
		"# pkg\nx.go:3: undefined: y\n[failpoint-toolexec]2026/01/01 failed to run command exit status 1": false,
		"[failpoint-toolexec]2026/01/01 failed to rewrite file boom":                                      true,
		"ok\n[failpoint-toolexec]2026/01/01 failed to inject failpoint go.mod file not found":             true,
	} {
		if got := rewriteFailed(out); got != want {
			t.Errorf("rewriteFailed(%q) = %v, want %v", out, got, want)
		}
	}
}
