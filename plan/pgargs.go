package plan

import (
	"fmt"
	"strings"
)

// pgReserved are the Postgres settings chaoskit sets itself for a managed
// server and a scenario may not change: where it listens (loopback TCP
// only, no Unix socket), on which port, how clients authenticate (a
// password made for the run), and the files that could change any of
// those.
var pgReserved = map[string]string{
	"listen_addresses":           "the server listens on 127.0.0.1 only",
	"port":                       "the port is {port:NAME}, chosen by chaoskit",
	"unix_socket_directories":    "the server has no Unix socket",
	"unix_socket_group":          "the server has no Unix socket",
	"unix_socket_permissions":    "the server has no Unix socket",
	"hba_file":                   "clients authenticate with the run's password ({password:NAME})",
	"ident_file":                 "clients authenticate with the run's password ({password:NAME})",
	"password_encryption":        "clients authenticate with the run's password ({password:NAME})",
	"krb_server_keyfile":         "clients authenticate with the run's password ({password:NAME})",
	"config_file":                "chaoskit writes the server's configuration",
	"data_directory":             "the data directory is deps/NAME of the run directory",
	"config":                     "chaoskit writes the server's configuration",
	"shared_memory_type":         "chaoskit chooses how the server's shared memory is released",
	"dynamic_shared_memory_type": "chaoskit chooses how the server's shared memory is released",
}

// checkPostgresArgs refuses postgres command-line arguments that would
// change what chaoskit sets (see pgReserved): only -c NAME=VALUE (or
// -cNAME=VALUE, --NAME=VALUE) of other settings is passed on.
func (v *validator) checkPostgresArgs(at, dep string, args []string) {
	hint := "pass other settings as -c NAME=VALUE, such as [-c, max_connections=200]"
	for i := 0; i < len(args); i++ {
		a, path := args[i], fmt.Sprintf("%s[%d]", at, i)
		var setting string
		switch {
		case a == "-c":
			if i+1 >= len(args) {
				v.errorf(path, hint, "dependency %q: -c needs a NAME=VALUE after it", dep)
				return
			}
			i++
			setting, path = args[i], fmt.Sprintf("%s[%d]", at, i)
		case strings.HasPrefix(a, "--"):
			setting = a[2:]
		case strings.HasPrefix(a, "-c"):
			setting = a[2:]
		case strings.HasPrefix(a, "-"):
			v.errorf(path, hint, "dependency %q: postgres option %q is not allowed: chaoskit sets the server's address, port, socket and data directory itself", dep, a)
			if len(a) == 2 && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++ // its value
			}
			continue
		default:
			v.errorf(path, hint, "dependency %q: %q is not a postgres option", dep, a)
			continue
		}
		name, _, ok := strings.Cut(setting, "=")
		name = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "-", "_"))
		if !ok || name == "" {
			v.errorf(path, hint, "dependency %q: %q is not NAME=VALUE", dep, setting)
			continue
		}
		if why, reserved := pgReserved[name]; reserved {
			v.errorf(path, "remove it: "+why, "dependency %q: postgres setting %s cannot be changed by a scenario", dep, name)
		}
	}
}
