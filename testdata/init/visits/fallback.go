//go:build !nofallback

package main

// fallback says whether reads fall back to the last copy served.
const fallback = true
