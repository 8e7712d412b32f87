package inject

import (
	"testing"

	"github.com/pingcap/failpoint"
)

var testSwitch = NewSwitch("switchTest")

// A Switch is off until armed, takes its path from its package, and fires
// the term failpoint's registry holds once armed.
func TestSwitch(t *testing.T) {
	if got, want := testSwitch.Path(), "github.com/chaoskit/chaoskit/inject/switchTest"; got != want {
		t.Fatalf("path %q, want %q", got, want)
	}
	if err := failpoint.Enable(testSwitch.Path(), `return("x")`); err != nil {
		t.Fatal(err)
	}
	defer failpoint.Disable(testSwitch.Path())
	if !armed.Load() {
		if _, ok := testSwitch.Eval(); ok {
			t.Fatal("an unarmed switch fired")
		}
	}
	Arm()
	if v, ok := testSwitch.Eval(); !ok || v != "x" {
		t.Fatalf("armed switch: %v %v, want x true", v, ok)
	}
	failpoint.Disable(testSwitch.Path())
	if _, ok := testSwitch.Eval(); ok {
		t.Fatal("a disabled switch fired")
	}
}

// BenchmarkSwitchOff is the cost of a switch that is off in a process
// never armed: one atomic load.
func BenchmarkSwitchOff(b *testing.B) {
	for i := 0; i < b.N; i++ {
		testSwitch.Eval()
	}
}
