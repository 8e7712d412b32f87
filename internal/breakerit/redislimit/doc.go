// Package redislimit holds the tests of breakerimpl/ratelimit/redislimit that need a real server
// started by internal/testserver (see package breakerit).
package redislimit
