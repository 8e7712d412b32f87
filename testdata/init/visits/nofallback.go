//go:build nofallback

package main

// fallback is off in the broken variant: a failing database is a 503.
const fallback = false
