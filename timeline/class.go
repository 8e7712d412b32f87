package timeline

import "slices"

// Class is what became of one request: the primary served it, a fallback
// served it, the service refused it fast, it failed, or it timed out.
//
// A request's class is not recorded: it is derived from the recorded
// response by the scenario's classification (package contract), so a run
// judged again with edited rules is classified again. The words live here,
// with the record, because every stage after the load generator speaks
// them: the runner's progress line, contracts and reports.
type Class string

// The classes a request falls into.
const (
	Primary  Class = "primary"
	Fallback Class = "fallback"
	Rejected Class = "rejected"
	Error    Class = "error"
	Timeout  Class = "timeout"
)

// Classes lists every class in the order reports show them.
var Classes = []Class{Primary, Fallback, Rejected, Error, Timeout}

// Valid reports whether c is one of Classes.
func (c Class) Valid() bool { return slices.Contains(Classes, c) }
