//go:build gofuzz

package fuzztarget

// FuzzExpect is the go-fuzz target of Expect.
func FuzzExpect(data []byte) int { return Expect(data) }

// FuzzParse is the go-fuzz target of Parse.
func FuzzParse(data []byte) int { return Parse(data) }

// FuzzSchedule is the go-fuzz target of Schedule.
func FuzzSchedule(data []byte) int { return Schedule(data) }
