// Package harness carries out what chaoskit's commands ask for, end to end:
// a run of scenarios (runner → contracts → reports), the judging of saved
// runs again, and fault-schedule fuzz campaigns (search → shrink → confirm)
// and explorations. cmd/chaoskit parses flags and prints; every decision a
// command needs is made here or, when it belongs to the scenario (its
// classifier, the headers its run records, its compiled contracts), once
// when the scenario loads (package plan).
package harness

import (
	"errors"

	"github.com/chaoskit/chaoskit/internal/exitcode"
)

// ErrContractsFailed is the error of an invocation whose verdict is not
// pass (exit code 1); the reports say why.
var ErrContractsFailed error = &exitcode.Error{Code: exitcode.Fail, Err: errors.New("contracts did not pass")}
