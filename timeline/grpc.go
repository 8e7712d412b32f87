package timeline

import "strconv"

// GRPCStatusHeader is the header a gRPC call's code is recorded in, as a
// number, as gRPC sends it in its trailers (grpc-status). A call's Status
// is the HTTP status of its code (see docs/grpc.md).
const GRPCStatusHeader = "Grpc-Status"

// grpcCodeNames are the names of gRPC's status codes, by number, as
// gRPC's documents write them.
var grpcCodeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// GRPCCodeName is the name of gRPC status code c: UNAVAILABLE for 14, CODE(99) for a code gRPC does not define.
func GRPCCodeName(c int) string {
	if c >= 0 && c < len(grpcCodeNames) {
		return grpcCodeNames[c]
	}
	return "CODE(" + strconv.Itoa(c) + ")"
}

// GRPCCode is the name of the gRPC code a request was answered with, read
// from its GRPCStatusHeader: "" for an HTTP request, and for a call the
// server gave no answer to.
func (r *Request) GRPCCode() string {
	v, ok := r.Headers[GRPCStatusHeader]
	if !ok {
		return ""
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return ""
	}
	return GRPCCodeName(n)
}
