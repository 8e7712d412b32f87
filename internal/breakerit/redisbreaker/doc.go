// Package redisbreaker holds the tests of breakerimpl/circuitbreaker/redisbreaker that need a real server
// started by internal/testserver (see package breakerit).
package redisbreaker
