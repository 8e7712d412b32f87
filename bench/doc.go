// Package bench compares breakerimpl with its Go peers (sony/gobreaker,
// afex/hystrix-go, go-zero, failsafe-go) on the same work. It lives in its
// own module so the peers never enter chaoskit's module graph.
//
//	cd bench && go test -run '^$' -bench Peers -benchmem -count 10
//
// Results, with the machine and Go version, are recorded in BENCHMARKS.md.
package bench
