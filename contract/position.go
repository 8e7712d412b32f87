package contract

import "fmt"

// Position is where a contract is written: the scenario file (or the file
// it includes the contract from) and the line and column, 1-based, of the
// contract's first key. The zero value means unknown, as for a verdict
// made from a hand-built Spec.
type Position struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// IsZero reports whether the position is unknown.
func (p Position) IsZero() bool { return p == Position{} }

// String is file:line:column, as compilers and editors write a position;
// file alone when the line is unknown.
func (p Position) String() string {
	if p.Line <= 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}
