package grpcx

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// HTTPHandlerOptions configures HTTPHandler. The zero value is usable.
type HTTPHandlerOptions struct {
	// Interceptors run around each call, first outermost, as
	// grpc.ChainUnaryInterceptor runs them on a gRPC server: give the
	// HTTP path the same chain as the gRPC server, so that both apply
	// the same guards.
	Interceptors []grpc.UnaryServerInterceptor
	// MinGzip is the size from which answers are gzipped for a client
	// that accepts gzip. Zero means 1024 bytes; below zero, never.
	MinGzip int
	// MaxMessageSize bounds a request's body, uncompressed; a larger one
	// is refused with RESOURCE_EXHAUSTED, as gRPC refuses a message over
	// its limit. Zero means 4 MiB, gRPC's default.
	MaxMessageSize int64
}

// HTTPHandler serves the unary methods of a gRPC service over HTTP/1.1,
// for the HTTPFallback of its clients: POST /{package.Service}/{Method}
// with the request message in protojson, answered with the response
// message in protojson, or with a google.rpc.Status in protojson and the
// HTTP status of its code (HTTPStatus). impl is what the gRPC server
// registers for desc, and each call runs through desc's own handler, so
// the implementation, the interceptors and the codes are the same on both
// paths.
//
// The call's context has the request's headers as incoming metadata (its
// trace context among them), the deadline of its Grpc-Timeout header,
// and a stream on which grpc.SetHeader and grpc.SetTrailer work; their
// metadata is sent back as Grpc-Metadata-* and Grpc-Trailer-* headers,
// and a retry hint also as Retry-After. Bodies are gzipped both ways:
// requests with Content-Encoding gzip are read, answers are gzipped for
// clients that accept it, and every answer says Accept-Encoding: gzip
// (RFC 7694) so that clients know they may compress. Streaming methods
// are not served: they answer UNIMPLEMENTED.
func HTTPHandler(desc *grpc.ServiceDesc, impl any, o HTTPHandlerOptions) http.Handler {
	if o.MinGzip == 0 {
		o.MinGzip = defaultMinGzip
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = defaultMaxMessageSize
	}
	b := &bridge{impl: impl, methods: map[string]grpc.MethodDesc{}, chain: chainUnary(o.Interceptors), o: o}
	for _, m := range desc.Methods {
		b.methods["/"+desc.ServiceName+"/"+m.MethodName] = m
	}
	return b
}

type bridge struct {
	impl    any
	methods map[string]grpc.MethodDesc
	chain   grpc.UnaryServerInterceptor
	o       HTTPHandlerOptions
}

func (b *bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Accept-Encoding", "gzip")
	m, ok := b.methods[r.URL.Path]
	switch {
	case !ok:
		b.fail(w, r, status.Newf(codes.Unimplemented, "grpcx: unknown method %s", r.URL.Path), nil)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		b.fail(w, r, status.Newf(codes.Unimplemented, "grpcx: %s takes POST, not %s", r.URL.Path, r.Method), nil)
		return
	}
	body, err := readBody(r.Body, r.Header.Get("Content-Encoding"), b.o.MaxMessageSize)
	switch {
	case errors.Is(err, errUnsupportedCoding):
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	case errors.Is(err, errTooLarge):
		b.fail(w, r, status.Newf(codes.ResourceExhausted, "grpcx: request larger than %d bytes", b.o.MaxMessageSize), nil)
		return
	case err != nil:
		b.fail(w, r, status.Newf(codes.InvalidArgument, "grpcx: read the request: %v", err), nil)
		return
	}
	ctx := metadata.NewIncomingContext(r.Context(), headerMetadata(r.Header))
	if v := r.Header.Get(headerTimeout); v != "" {
		if d, ok := decodeTimeout(v); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	stream := &httpStream{method: r.URL.Path}
	ctx = grpc.NewContextWithServerTransportStream(ctx, stream)
	dec := func(m any) error {
		if err := unmarshal.Unmarshal(body, m.(proto.Message)); err != nil {
			return status.Errorf(codes.InvalidArgument, "grpcx: decode the request: %v", err)
		}
		return nil
	}
	resp, err := m.Handler(b.impl, ctx, dec, b.chain)
	if err != nil {
		b.fail(w, r, StatusOf(err), stream)
		return
	}
	out, err := marshal.Marshal(resp.(proto.Message))
	if err != nil {
		b.fail(w, r, status.Newf(codes.Internal, "grpcx: encode the answer: %v", err), stream)
		return
	}
	b.write(w, r, http.StatusOK, out, stream)
}

// fail answers with st.
func (b *bridge) fail(w http.ResponseWriter, r *http.Request, st *status.Status, stream *httpStream) {
	out, err := marshal.Marshal(st.Proto())
	if err != nil {
		out = []byte(`{"code":13,"message":"grpcx: encode the status"}`)
	}
	b.write(w, r, HTTPStatus(st.Code()), out, stream)
}

func (b *bridge) write(w http.ResponseWriter, r *http.Request, code int, body []byte, stream *httpStream) {
	h := w.Header()
	if stream != nil {
		header, trailer := stream.metadata()
		writeMetadata(h, header, trailer)
	}
	h.Set("Content-Type", contentTypeJSON)
	if b.o.MinGzip >= 0 && len(body) >= b.o.MinGzip && acceptsGzip(r.Header) {
		body = gzipBytes(body)
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Vary", "Accept-Encoding")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// httpStream collects the metadata a handler sets for an HTTP answer.
type httpStream struct {
	method          string
	mu              sync.Mutex
	header, trailer metadata.MD
}

func (s *httpStream) Method() string { return s.method }

func (s *httpStream) SetHeader(md metadata.MD) error {
	s.mu.Lock()
	s.header = metadata.Join(s.header, md)
	s.mu.Unlock()
	return nil
}

// SendHeader sets the header like SetHeader: an HTTP answer sends its
// headers with its body.
func (s *httpStream) SendHeader(md metadata.MD) error { return s.SetHeader(md) }

func (s *httpStream) SetTrailer(md metadata.MD) error {
	s.mu.Lock()
	s.trailer = metadata.Join(s.trailer, md)
	s.mu.Unlock()
	return nil
}

func (s *httpStream) metadata() (header, trailer metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header, s.trailer
}

// chainUnary makes one interceptor of several, the first outermost, as
// grpc.ChainUnaryInterceptor does; nil for none.
func chainUnary(ics []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	switch len(ics) {
	case 0:
		return nil
	case 1:
		return ics[0]
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return ics[0](ctx, req, info, chained(ics[1:], info, handler))
	}
}

func chained(ics []grpc.UnaryServerInterceptor, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) grpc.UnaryHandler {
	if len(ics) == 0 {
		return final
	}
	return func(ctx context.Context, req any) (any, error) {
		return ics[0](ctx, req, info, chained(ics[1:], info, final))
	}
}
