// Package degrade holds the tests of breakerimpl/degrade that need a real server
// started by internal/testserver (see package breakerit).
package degrade
