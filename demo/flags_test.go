package demo

import (
	"strings"
	"testing"
)

func TestCheckArgs(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" means accepted
	}{
		{nil, ""},
		{[]string{"--no-fallback", "--no-breaker=true", "-v"}, ""},
		{[]string{"--bug=stale-after-recovery", "--db-timeout", "50ms"}, ""},
		{[]string{"--bug="}, ""},
		{[]string{"--listen", "127.0.0.1:0"}, ""},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag; the demo's flags are --ack-before-commit, "},
		{[]string{"-no-fallback"}, "unknown shorthand flag: 'n' in -no-fallback"},
		{[]string{"--db-timeout", "soon"}, `invalid argument "soon" for "--db-timeout"`},
		{[]string{"--db"}, "flag needs an argument: --db"},
		{[]string{"serve"}, `the demo takes flags only, not "serve"`},
		{[]string{"--listen", "0.0.0.0:80"}, `--listen "0.0.0.0:80": the demo only listens on loopback addresses`},
		{[]string{"--recommendations-grpc-listen", "127.0.0.1:0", "--recommendations-grpc-dial", "127.0.0.1:9"}, ""},
		{[]string{"--recommendations-grpc-listen", "10.0.0.1:80"}, `--recommendations-grpc-listen "10.0.0.1:80": the demo only listens on loopback addresses`},
		{[]string{"--recommendations-grpc-dial", "example.com:80"}, `--recommendations-grpc-dial "example.com:80": the demo only dials loopback addresses`},
		{[]string{"--bug", "nope"}, `unknown --bug "nope" (known: stale-after-recovery)`},
		{[]string{"--lie=source"}, ""},
		{[]string{"--lie", "nope"}, `unknown --lie "nope" (known: breaker, bulkhead, counters, degrade, primary, source)`},
		{[]string{"--help"}, "--help makes the demo print its help and exit instead of serving"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			err := CheckArgs(tt.args)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
		})
	}
}
