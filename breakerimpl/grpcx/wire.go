package grpcx

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// The HTTP path of a call, one request and one answer over HTTP/1.1:
//
//	POST {base}/{package.Service}/{Method}
//	Content-Type: application/json          the request message in protojson
//	Accept-Encoding: gzip
//	Content-Encoding: gzip                   once the server said it takes gzip (RFC 7694)
//	Grpc-Timeout: 250m                       the call's deadline, as gRPC writes it
//	{outgoing metadata as headers}           traceparent among them
//
//	200 OK, the response message in protojson (gzipped if asked), or
//	the status of HTTPStatus(code), a google.rpc.Status in protojson
//	Accept-Encoding: gzip                    the server takes gzipped requests
//	Grpc-Metadata-{key}: header metadata
//	Grpc-Trailer-{key}: trailer metadata     the retry hint among them
//	Retry-After: seconds                     with a retry hint

// Header names of the HTTP path.
const (
	headerTimeout         = "Grpc-Timeout"
	headerMetadataPrefix  = "Grpc-Metadata-"
	headerTrailerPrefix   = "Grpc-Trailer-"
	contentTypeJSON       = "application/json"
	defaultMaxMessageSize = 4 << 20 // gRPC's default receive limit
	defaultMinGzip        = 1024
)

var (
	unmarshal = protojson.UnmarshalOptions{DiscardUnknown: true}
	marshal   = protojson.MarshalOptions{}
)

// acceptsGzip says whether a header set's Accept-Encoding lists gzip.
func acceptsGzip(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if strings.EqualFold(strings.TrimSpace(coding), "gzip") && !strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") {
				return true
			}
		}
	}
	return false
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// readBody reads at most limit bytes of a body in the given content
// coding (empty or identity, or gzip), uncompressed; more is an error.
func readBody(r io.Reader, coding string, limit int64) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(coding)) {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, errUnsupportedCoding
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

var (
	errUnsupportedCoding = fmt.Errorf("content coding not supported (gzip and identity are)")
	errTooLarge          = fmt.Errorf("message larger than the limit")
)

// encodeTimeout writes d as gRPC's grpc-timeout does: at most eight
// digits and a unit, rounded up.
func encodeTimeout(d time.Duration) string {
	if d <= 0 {
		return "1n"
	}
	units := []struct {
		unit string
		d    time.Duration
	}{{"n", time.Nanosecond}, {"u", time.Microsecond}, {"m", time.Millisecond}, {"S", time.Second}, {"M", time.Minute}, {"H", time.Hour}}
	for _, u := range units {
		if n := (d + u.d - 1) / u.d; n < 1e8 {
			return strconv.FormatInt(int64(n), 10) + u.unit
		}
	}
	return "99999999H"
}

// decodeTimeout reads a grpc-timeout value.
func decodeTimeout(s string) (time.Duration, bool) {
	if len(s) < 2 || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	unit := map[byte]time.Duration{'n': time.Nanosecond, 'u': time.Microsecond, 'm': time.Millisecond, 'S': time.Second, 'M': time.Minute, 'H': time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, false
	}
	return time.Duration(n) * unit, true
}

// reservedHeader says whether an HTTP request header is the HTTP path's
// own, not the call's metadata.
func reservedHeader(h string) bool {
	switch strings.ToLower(h) {
	case "content-type", "content-length", "content-encoding", "accept", "accept-encoding",
		"connection", "host", "transfer-encoding", "te", "trailer", "upgrade", "keep-alive",
		"proxy-connection", "grpc-timeout":
		return true
	}
	return false
}

// metadataHeaders writes outgoing metadata as request headers: text keys
// as they are; binary (-bin) keys and gRPC's reserved grpc- keys are left
// out.
func metadataHeaders(h http.Header, md metadata.MD) {
	for k, vs := range md {
		if strings.HasSuffix(k, "-bin") || strings.HasPrefix(k, "grpc-") || strings.HasPrefix(k, ":") || reservedHeader(k) {
			continue
		}
		for _, v := range vs {
			h.Add(k, v)
		}
	}
}

// headerMetadata reads the call's metadata from request headers.
func headerMetadata(h http.Header) metadata.MD {
	md := metadata.MD{}
	for k, vs := range h {
		if reservedHeader(k) {
			continue
		}
		md.Append(strings.ToLower(k), vs...)
	}
	return md
}

// responseMetadata reads the header and trailer metadata the HTTP path
// sent back, and turns a Retry-After without a pushback into the
// retry-after trailer, so that a retry reads one hint either way.
func responseMetadata(h http.Header) (header, trailer metadata.MD) {
	header, trailer = metadata.MD{}, metadata.MD{}
	for k, vs := range h {
		switch {
		case strings.HasPrefix(k, headerMetadataPrefix):
			header.Append(strings.ToLower(k[len(headerMetadataPrefix):]), vs...)
		case strings.HasPrefix(k, headerTrailerPrefix):
			trailer.Append(strings.ToLower(k[len(headerTrailerPrefix):]), vs...)
		}
	}
	if ra := h.Get("Retry-After"); ra != "" && len(trailer.Get(PushbackKey)) == 0 && len(trailer.Get(RetryAfterKey)) == 0 {
		trailer.Set(RetryAfterKey, ra)
	}
	return header, trailer
}

// writeMetadata writes header and trailer metadata as response headers,
// with a Retry-After for a retry hint.
func writeMetadata(h http.Header, header, trailer metadata.MD) {
	for k, vs := range header {
		for _, v := range vs {
			h.Add(headerMetadataPrefix+k, v)
		}
	}
	for k, vs := range trailer {
		for _, v := range vs {
			h.Add(headerTrailerPrefix+k, v)
		}
	}
	if d, ok := hint(trailer); ok && d >= 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
}

// statusOfResponse is the status of a non-200 answer of the HTTP path:
// the google.rpc.Status of its body if it has one, or else the status
// CodeOfHTTP gives its HTTP status, with the start of the body as the
// message.
func statusOfResponse(code int, contentType string, body []byte) *status.Status {
	if strings.HasPrefix(contentType, contentTypeJSON) {
		var p spb.Status
		if err := unmarshal.Unmarshal(body, &p); err == nil && p.Code != 0 {
			return status.FromProto(&p)
		}
	}
	msg := strings.TrimSpace(string(body[:min(len(body), 256)]))
	if msg == "" {
		msg = http.StatusText(code)
	}
	return status.New(CodeOfHTTP(code), fmt.Sprintf("grpcx: HTTP path answered %d: %s", code, msg))
}
