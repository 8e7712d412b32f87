// Package fuzzbytes reads the bytes of a fuzz input as a stream of choices,
// for the fuzz bodies of breakerimpl's packages.
package fuzzbytes

// Input is a fuzz input read from the front.
type Input []byte

// Next returns the next byte, and 0 once the input runs out, so that every
// input, however short, decodes to something.
func (in *Input) Next() byte {
	if len(*in) == 0 {
		return 0
	}
	b := (*in)[0]
	*in = (*in)[1:]
	return b
}
