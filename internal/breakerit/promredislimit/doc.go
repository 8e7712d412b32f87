// Package promredislimit holds the tests of breakerimpl/promredislimit that need a real server
// started by internal/testserver (see package breakerit).
package promredislimit
