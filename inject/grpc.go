package inject

import (
	"fmt"
	"strconv"
	"strings"
)

// grpcCodes are gRPC's status codes by number, with the names of the
// google.rpc.Code enum (the names gRPC's documentation uses). They are
// written out here so that inject, a module a service's go.mod takes on,
// never depends on grpc; a test in demo/recommend checks them against
// google.golang.org/grpc/codes.
var grpcCodes = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

const maxGRPCCode = uint64(len(grpcCodes) - 1)

// GRPCCodeName returns the name of a gRPC status code, such as
// "UNAVAILABLE" for 14, or the number for a code gRPC does not define.
func GRPCCodeName(code uint32) string {
	if uint64(code) <= maxGRPCCode {
		return grpcCodes[code]
	}
	return strconv.FormatUint(uint64(code), 10)
}

// GRPCCodeNames lists the names of the codes, in order.
func GRPCCodeNames() []string { return append([]string(nil), grpcCodes[:]...) }

// ParseGRPCStatus reads a grpc fault's value: a code by name, in any case,
// with CANCELED or CANCELLED, or by number, then optionally a colon and a
// message ("UNAVAILABLE: recommendations down"). OK is refused: it is no
// fault. A value without a message gets "injected <NAME>".
func ParseGRPCStatus(v string) (code uint32, msg string, err error) {
	name, msg, _ := strings.Cut(v, ":")
	name, msg = strings.TrimSpace(name), strings.TrimSpace(msg)
	if name == "" {
		return 0, "", fmt.Errorf("action grpc needs a value, a gRPC status code such as UNAVAILABLE, optionally with a message: \"UNAVAILABLE: dependency down\"")
	}
	found := false
	if n, perr := strconv.ParseUint(name, 10, 32); perr == nil && n <= maxGRPCCode {
		code, found = uint32(n), true
	}
	upper := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if upper == "CANCELED" {
		upper = "CANCELLED"
	}
	for i, c := range grpcCodes {
		if c == upper || strings.ReplaceAll(c, "_", "") == upper {
			code, found = uint32(i), true
		}
	}
	if !found {
		return 0, "", fmt.Errorf("grpc value %q is not a gRPC status code; the codes are %s", name, strings.Join(grpcCodes[1:], ", "))
	}
	if code == 0 {
		return 0, "", fmt.Errorf("grpc value %q is OK, which fails nothing; give a failing code such as UNAVAILABLE", name)
	}
	if msg == "" {
		msg = "injected " + grpcCodes[code]
	}
	return code, msg, nil
}
