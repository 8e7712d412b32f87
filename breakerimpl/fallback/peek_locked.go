//go:build !amd64 || race

package fallback

// peekSame reports whether e holds v, remembered at now, when that can be
// told without taking the entry; here it cannot (see peek.go), so it
// reports false and Remember writes, as a Remember that changes nothing
// but takes the entry costs as much as one that writes.
func peekSame[K comparable, T any](*entry[K, T], T, int64) bool { return false }
