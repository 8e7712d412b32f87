//go:build !nofallback

package main

// fallback says whether reads fall back to the source while Redis fails.
const fallback = true
