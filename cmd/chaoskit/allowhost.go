package main

import (
	"github.com/spf13/cobra"

	"github.com/chaoskit/chaoskit/internal/reach"
)

// allowHostUsage is the help of --allow-host, the same on every command.
const allowHostUsage = "consent to traffic to HOST beyond loopback (a host name, IP address or CIDR prefix; repeatable, or a comma list); " +
	"a scenario must also list it under allow_hosts"

// allowHostFlag registers --allow-host on cmd, into hosts.
func allowHostFlag(cmd *cobra.Command, hosts *[]string) {
	cmd.Flags().StringSliceVar(hosts, "allow-host", nil, allowHostUsage)
}

// checkAllowHosts refuses an --allow-host value that is not a host name,
// an IP address or a CIDR prefix (exit 2), and returns the values
// normalized.
func checkAllowHosts(hosts []string) ([]string, error) {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		e, err := reach.Entry(h)
		if err != nil {
			return nil, usageError("--allow-host: %v", err)
		}
		out = append(out, e)
	}
	return out, nil
}
