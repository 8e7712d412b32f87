package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/internal/reach"
	"github.com/chaoskit/chaoskit/plan"
	"github.com/chaoskit/chaoskit/timeline"
)

// grpcClient is the run's connection to target.grpc and the descriptors
// of the methods its calls use.
type grpcClient struct {
	conn *grpc.ClientConn
	// base is grpc://ADDRESS, the start of a call's URL on the timeline.
	base  string
	files *protoregistry.Files
	// methods are the calls' methods by path (/package.Service/Method).
	methods map[string]protoreflect.MethodDescriptor
}

// connectGRPC connects to the target's gRPC server, when a phase calls
// it, and learns the methods of the calls: from the scenario's descriptor
// set, else by server reflection. A call whose method the service does not
// have, or whose message does not fit it, is invalid input (exit 2) at
// the place the scenario writes it.
func (r *run) connectGRPC(ctx context.Context) error {
	uses := r.sc.Load.HasGRPC()
	for i := range r.sc.Phases {
		uses = uses || r.sc.Phases[i].Effective.HasGRPC()
	}
	if !uses {
		return nil
	}
	addr := r.tgt.grpcAddr
	g, err := openGRPC(ctx, addr, r.sc.Reach, r.grpcTLS(), r.sc.Target.GRPC.Files, r.sc.GRPCServices())
	r.grpc = g
	if err != nil {
		return err
	}
	return r.sc.CheckGRPC(g.files)
}

// grpcTLS is the TLS configuration of the target's gRPC address: nil
// for plain text, else what target.tls trusts.
func (r *run) grpcTLS() *tls.Config {
	if g := r.sc.Target.GRPC; g == nil || !g.TLS {
		return nil
	}
	return r.tls.config
}

// grpcCredentials is plain text without a TLS configuration, else TLS
// with it (gRPC adds the h2 ALPN protocol it needs).
func grpcCredentials(cfg *tls.Config) credentials.TransportCredentials {
	if cfg == nil {
		return insecure.NewCredentials()
	}
	return credentials.NewTLS(cfg.Clone())
}

// openGRPC connects to the gRPC server at addr (on loopback or a host allow
// allows), over TLS with cfg when it is not nil, and learns
// its methods: from files, else by server reflection, asking for services
// besides those it lists.
func openGRPC(ctx context.Context, addr string, allow *reach.Policy, cfg *tls.Config, files *protoregistry.Files, services []string) (*grpcClient, error) {
	dial := allow.Dial(&net.Dialer{Timeout: controlTimeout})
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(grpcCredentials(cfg)),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return dial(ctx, "tcp", a) }),
		grpc.WithStatsHandler(answerWatch{}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCMessage)))
	if err != nil {
		return nil, infra("cannot connect to the target's gRPC server at "+addr, "fix target.grpc.address", err)
	}
	g := &grpcClient{conn: conn, base: "grpc://" + addr, files: files, methods: map[string]protoreflect.MethodDescriptor{}}
	if g.files == nil {
		rctx, cancel := context.WithTimeout(ctx, reflectTimeout)
		defer cancel()
		if g.files, err = reflectFiles(rctx, conn, services); err != nil {
			return g, infra("cannot read the gRPC service's descriptors by server reflection at "+addr+": "+err.Error(),
				"register reflection in the service (reflection.Register(server), google.golang.org/grpc/reflection) or name its descriptors in target.grpc.descriptor_set", nil)
		}
	}
	for _, m := range plan.MethodNames(g.files) {
		md, _ := plan.FindMethod(g.files, m)
		g.methods["/"+m] = md
	}
	return g, nil
}

// close closes the connection.
func (g *grpcClient) close() {
	if g != nil {
		g.conn.Close()
	}
}

const (
	// reflectTimeout bounds the reading of a service's descriptors by
	// reflection.
	reflectTimeout = 10 * time.Second
	// maxReflectFiles and maxReflectBytes bound what reflection may hand
	// chaoskit: a service of a few hundred files is large.
	maxReflectFiles = 4096
	maxReflectBytes = 64 << 20
	// maxGRPCMessage bounds a response message, as vegeta.MaxBody bounds
	// an HTTP body.
	maxGRPCMessage = 4 << 20
)

// reflectFiles asks a server, by server reflection (grpc.reflection.v1),
// for the files that define the services it lists and those it names, and
// every file they import.
func reflectFiles(ctx context.Context, conn *grpc.ClientConn, named []string) (*protoregistry.Files, error) {
	stream, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	defer stream.CloseSend()
	ask := func(req *rpb.ServerReflectionRequest) (*rpb.ServerReflectionResponse, error) {
		if err := stream.Send(req); err != nil {
			return nil, err
		}
		return stream.Recv()
	}
	list, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_ListServices{}})
	if err != nil {
		return nil, err
	}
	if e := list.GetErrorResponse(); e != nil {
		return nil, fmt.Errorf("%s", e.GetErrorMessage())
	}
	symbols := append([]string(nil), named...)
	for _, s := range list.GetListServicesResponse().GetService() {
		symbols = append(symbols, s.GetName())
	}
	files := map[string]*descriptorpb.FileDescriptorProto{}
	size := 0
	add := func(res *rpb.ServerReflectionResponse) error {
		for _, b := range res.GetFileDescriptorResponse().GetFileDescriptorProto() {
			if size += len(b); size > maxReflectBytes || len(files) >= maxReflectFiles {
				return fmt.Errorf("the server's descriptors exceed %d files or %d bytes", maxReflectFiles, maxReflectBytes)
			}
			fd := &descriptorpb.FileDescriptorProto{}
			if err := proto.Unmarshal(b, fd); err != nil {
				return fmt.Errorf("a file descriptor does not decode: %v", err)
			}
			if _, ok := files[fd.GetName()]; !ok {
				files[fd.GetName()] = fd
			}
		}
		return nil
	}
	for _, s := range symbols {
		res, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: s}})
		if err != nil {
			return nil, err
		}
		if res.GetErrorResponse() != nil {
			continue // a service it does not have: CheckGRPC names it
		}
		if err := add(res); err != nil {
			return nil, err
		}
	}
	// The imports a server did not send with the files (it sends them
	// all, as a rule), one by one; bounded by maxReflectFiles.
	for missing := missingImports(files); len(missing) > 0; missing = missingImports(files) {
		for _, name := range missing {
			res, err := ask(&rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: name}})
			if err != nil {
				return nil, err
			}
			if e := res.GetErrorResponse(); e != nil {
				return nil, fmt.Errorf("file %s: %s", name, e.GetErrorMessage())
			}
			before := len(files)
			if err := add(res); err != nil {
				return nil, err
			}
			if _, ok := files[name]; !ok || len(files) == before {
				return nil, fmt.Errorf("the server did not send file %s", name)
			}
		}
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, fd := range files {
		set.File = append(set.File, fd)
	}
	return protodesc.NewFiles(set)
}

func missingImports(files map[string]*descriptorpb.FileDescriptorProto) []string {
	var out []string
	seen := map[string]bool{}
	for _, fd := range files {
		for _, dep := range fd.GetDependency() {
			if _, ok := files[dep]; !ok && !seen[dep] {
				seen[dep] = true
				out = append(out, dep)
			}
		}
	}
	return out
}

// answeredKey marks a call's context with the flag answerWatch sets when
// the server answered it.
type answeredKey struct{}

// answerWatch notes, for each call, whether the server sent its headers
// or its trailers: a status the server gave, as against one the client
// made up (a deadline that passed, a connection refused or cut), which
// is a call without a response, as an HTTP request without one is.
type answerWatch struct{}

func (answerWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (answerWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (answerWatch) HandleConn(context.Context, stats.ConnStats) {}
func (answerWatch) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch s.(type) {
	case *stats.InHeader, *stats.InTrailer:
		if a, ok := ctx.Value(answeredKey{}).(*atomic.Bool); ok {
			a.Store(true)
		}
	}
}

// grpcMarshal writes a response message as the timeline keeps it: protojson
// with every field, so that json("count") of a zero count is 0, not
// missing.
var grpcMarshal = protojson.MarshalOptions{EmitUnpopulated: true}

// call makes one unary call of q and returns it as a vegeta result, the
// form every request of a run is recorded in: Code the HTTP status of its
// gRPC code (0 when the server gave none), Headers its response metadata,
// headers and trailers, with Grpc-Status and Grpc-Message, Body the
// response message in JSON.
func (g *grpcClient) call(ctx context.Context, q plan.Request, timeout time.Duration, seq uint64) *vegeta.Result {
	res := &vegeta.Result{Seq: seq, Method: q.Method, URL: withTemplate(g.base+q.Path, q), Timestamp: time.Now()}
	md := g.methods[q.Path]
	if md == nil {
		res.Error = "chaoskit: the service has no method " + q.Path
		return res
	}
	in := dynamicpb.NewMessage(md.Input())
	if err := protojson.Unmarshal(q.Body, in); err != nil {
		res.Error = fmt.Sprintf("chaoskit: the message %s does not fit %s: %v", q.Body, md.Input().FullName(), err)
		return res
	}
	res.BytesOut = uint64(proto.Size(in))
	if d := q.GRPC.Deadline.D(); d > 0 {
		timeout = d
	}
	answered := new(atomic.Bool)
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, answeredKey{}, answered), timeout)
	defer cancel()
	if len(q.Headers) > 0 {
		cctx = metadata.NewOutgoingContext(cctx, metadata.New(q.Headers))
	}
	out := dynamicpb.NewMessage(md.Output())
	var header, trailer metadata.MD
	err := g.conn.Invoke(cctx, q.Path, in, out, grpc.Header(&header), grpc.Trailer(&trailer))
	res.Latency = time.Since(res.Timestamp)
	st := status.Convert(err)
	// A DEADLINE_EXCEEDED the server sent once the call's own deadline had
	// passed is the same event as the client's timeout (the server gave
	// up with the client, and which of the two reached Invoke first is a
	// race): it is recorded as the timeout, with no response. Only one
	// answered before the call's deadline is the server's answer, a 504.
	deadline, _ := cctx.Deadline()
	expired := errors.Is(cctx.Err(), context.DeadlineExceeded) || !time.Now().Before(deadline)
	if err != nil && (!answered.Load() || st.Code() == codes.DeadlineExceeded && expired) {
		res.Error = "grpc: " + codeName(st.Code()) + ": " + st.Message()
		if st.Code() == codes.DeadlineExceeded || errors.Is(cctx.Err(), context.DeadlineExceeded) {
			// In the words the classifier reads as a timeout, whatever
			// the transport said (a reset stream, as often as not).
			res.Error = "grpc: deadline exceeded (DEADLINE_EXCEEDED): " + st.Message()
		}
		return res
	}
	// The HTTP status of the code, as google.rpc.Code maps them, so
	// that the classification, status predicates and every figure read
	// a call as they read an HTTP request.
	res.Code = uint16(grpcx.HTTPStatus(st.Code()))
	res.Headers = http.Header{}
	for _, m := range []metadata.MD{header, trailer} {
		for k, vs := range m {
			if strings.HasSuffix(k, "-bin") {
				continue
			}
			for _, v := range vs {
				res.Headers.Add(k, v)
			}
		}
	}
	res.Headers.Set(GRPCStatusHeader, strconv.Itoa(int(st.Code())))
	if st.Message() != "" {
		res.Headers.Set("Grpc-Message", st.Message())
	}
	if err != nil {
		res.Error = codeName(st.Code()) + ": " + st.Message()
		return res
	}
	if b, err := grpcMarshal.Marshal(out); err == nil {
		res.Body = b
		res.BytesIn = uint64(proto.Size(out))
	}
	return res
}

// GRPCStatusHeader is the header a gRPC call's code is recorded in, as a
// number, as gRPC sends it in its trailers.
const GRPCStatusHeader = timeline.GRPCStatusHeader

// codeName is a code's name as gRPC's documents write it: UNAVAILABLE.
func codeName(c codes.Code) string { return timeline.GRPCCodeName(int(c)) }

// pacedAttack drives work at a vegeta pacer's rate, as vegeta's
// attacker drives HTTP requests: an open model, in which a hit is due
// when the pacer says, whether or not the hits before it have ended;
// workers are added, up to maxWorkers, when none is free for a due hit.
// It ends after d or when the pacer says stop, or on Stop, and waits for
// the hits under way. The gRPC calls of a phase and the iterations of its
// request chains run in it.
type pacedAttack struct {
	workers    int
	maxWorkers int
	stopOnce   sync.Once
	stopch     chan struct{}
}

func newPacedAttack(l plan.Load) pacedAttack {
	return pacedAttack{workers: max(l.Workers, 1), maxWorkers: max(l.MaxWorkers, l.Workers, 1), stopch: make(chan struct{})}
}

// Stop stops starting hits; those under way end on their own.
func (a *pacedAttack) Stop() {
	a.stopOnce.Do(func() { close(a.stopch) })
}

// attack calls hit once per arrival of p for d, and closes results once
// the last hit has returned. hit hands its results to results.
func (a *pacedAttack) attack(p vegeta.Pacer, d time.Duration, results chan *vegeta.Result, hit func()) {
	ticks := make(chan struct{})
	var wg sync.WaitGroup
	worker := func() {
		defer wg.Done()
		for range ticks {
			hit()
		}
	}
	workers := a.workers
	for range workers {
		wg.Add(1)
		go worker()
	}
	go func() {
		defer close(results)
		defer wg.Wait()
		defer close(ticks)
		began := time.Now()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for count := uint64(0); ; {
			elapsed := time.Since(began)
			if d > 0 && elapsed > d {
				return
			}
			wait, stop := p.Pace(elapsed, count)
			if stop {
				return
			}
			if wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-a.stopch:
					timer.Stop()
					return
				}
			}
			if workers < a.maxWorkers {
				select {
				case ticks <- struct{}{}:
					count++
					continue
				case <-a.stopch:
					return
				default:
					workers++ // none free: one more, as vegeta does
					wg.Add(1)
					go worker()
				}
			}
			select {
			case ticks <- struct{}{}:
				count++
			case <-a.stopch:
				return
			}
		}
	}()
}

// grpcAttack drives a phase's gRPC calls in a pacedAttack: one call per
// arrival of the pacer.
type grpcAttack struct {
	pacedAttack
	g       *grpcClient
	next    func() plan.Request
	timeout time.Duration
	seq     atomic.Uint64
}

func newGRPCAttack(g *grpcClient, next func() plan.Request, l plan.Load) *grpcAttack {
	return &grpcAttack{pacedAttack: newPacedAttack(l), g: g, next: next, timeout: l.Timeout.D()}
}

// Attack sends calls paced by p for d and returns their results, closed
// when the last has come back.
func (a *grpcAttack) Attack(ctx context.Context, p vegeta.Pacer, d time.Duration) <-chan *vegeta.Result {
	results := make(chan *vegeta.Result)
	a.attack(p, d, results, func() {
		results <- a.g.call(ctx, a.next(), a.timeout, a.seq.Add(1)-1)
	})
	return results
}

// errNoGRPC is the error of a phase that calls gRPC in a run that did not
// connect to it; connectGRPC prevents it.
var errNoGRPC = errors.New("chaoskit: the run has no gRPC connection")
