//go:build amd64 && !race

package fallback

// peekSame reports whether e holds v, remembered at now, without taking
// the entry: it reads value and at between two loads of seq and trusts
// them only if seq was even and unchanged, so no write overlapped.
//
// The reads of value and at race with writers by design (a seqlock), so
// this version is built only where that is sound: on amd64, whose loads
// are not reordered with other loads, so the second load of seq comes
// after the reads it checks; and not under the race detector, which would
// rightly report the race. Elsewhere Remember always writes (peek_locked.go).
// A copy torn by a write is never compared: seq tells first.
func peekSame[K comparable, T any](e *entry[K, T], v T, now int64) bool {
	s := e.seq.Load()
	if s&1 != 0 || e.at != now {
		return false
	}
	old := e.value
	return e.seq.Load() == s && same(old, v)
}
