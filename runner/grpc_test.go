package runner

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/chaoskit/chaoskit/plan"
)

// echoFile is the test service: test.Echo/Say(Word{int32 n}) returns
// Word. n 2 is answered UNAVAILABLE, with the trailer x-why; n 3 is never
// answered (the call's deadline passes); any other is echoed with the
// header x-source: primary, and the x-tenant metadata in its text.
var echoFile = &descriptorpb.FileDescriptorProto{
	Name: proto.String("test/echo.proto"), Package: proto.String("test"), Syntax: proto.String("proto3"),
	MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Word"), Field: []*descriptorpb.FieldDescriptorProto{
		{Name: proto.String("n"), JsonName: proto.String("n"), Number: proto.Int32(1), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()},
		{Name: proto.String("text"), JsonName: proto.String("text"), Number: proto.Int32(2), Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()},
	}}},
	Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Echo"), Method: []*descriptorpb.MethodDescriptorProto{
		{Name: proto.String("Say"), InputType: proto.String(".test.Word"), OutputType: proto.String(".test.Word")}}}},
}

// startEcho serves the test service, with reflection, on a loopback port
// and returns its address. Its descriptors are resolved from a registry of
// its own, not the process's global one.
func startEcho(t *testing.T) string {
	t.Helper()
	files := new(protoregistry.Files)
	fd, err := protodesc.NewFile(echoFile, files)
	if err != nil {
		t.Fatal(err)
	}
	if err := files.RegisterFile(fd); err != nil {
		t.Fatal(err)
	}
	word := fd.Messages().ByName("Word")
	n, text := word.Fields().ByName("n"), word.Fields().ByName("text")
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{ServiceName: "test.Echo", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{{
		MethodName: "Say",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := dynamicpb.NewMessage(word)
			if err := dec(in); err != nil {
				return nil, err
			}
			switch in.Get(n).Int() {
			case 2:
				grpc.SetTrailer(ctx, metadata.Pairs("x-why", "overloaded"))
				return nil, status.Error(codes.Unavailable, "try later")
			case 3:
				<-ctx.Done()
				return nil, ctx.Err()
			}
			grpc.SetHeader(ctx, metadata.Pairs("x-source", "primary"))
			out := dynamicpb.NewMessage(word)
			out.Set(n, in.Get(n))
			md, _ := metadata.FromIncomingContext(ctx)
			out.Set(text, protoreflect.ValueOfString("tenant "+strings.Join(md.Get("x-tenant"), ",")))
			return out, nil
		}}}}, struct{}{})
	rpb.RegisterServerReflectionServer(srv, reflection.NewServerV1(reflection.ServerOptions{Services: srv, DescriptorResolver: files}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func echoRequest(n int, metadata map[string]string, deadline time.Duration) plan.Request {
	return plan.Request{Method: "POST", Path: "/test.Echo/Say", Body: []byte(`{"n": ` + string(rune('0'+n)) + `}`), Headers: metadata,
		GRPC: &plan.GRPCCall{Method: "test.Echo/Say", Deadline: plan.Duration(deadline)}}
}

// TestGRPCCall: a call's descriptors are read by server reflection; an
// answer is recorded with the HTTP status of its code, its metadata as
// headers (Grpc-Status among them) and its message as JSON; an
// UNAVAILABLE answer as a 503 with its trailers; a call whose deadline
// passed with no answer as no response, with an error the classifier
// reads as a timeout.
func TestGRPCCall(t *testing.T) {
	addr := startEcho(t)
	ctx := context.Background()
	g, err := openGRPC(ctx, addr, nil, nil, nil, []string{"test.Echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	if g.methods["/test.Echo/Say"] == nil {
		t.Fatalf("methods read by reflection: %v", plan.MethodNames(g.files))
	}

	res := g.call(ctx, echoRequest(1, map[string]string{"x-tenant": "t1"}, 0), time.Second, 0)
	if res.Code != 200 || res.Error != "" || res.Headers.Get("X-Source") != "primary" || res.Headers.Get("Grpc-Status") != "0" {
		t.Errorf("OK: code %d, error %q, headers %v", res.Code, res.Error, res.Headers)
	}
	if string(res.Body) != `{"n":1,"text":"tenant t1"}` && string(res.Body) != `{"n":1, "text":"tenant t1"}` {
		t.Errorf("OK: body %s", res.Body)
	}
	if res.URL != "grpc://"+addr+"/test.Echo/Say" || res.Method != "POST" {
		t.Errorf("OK: %s %s", res.Method, res.URL)
	}

	res = g.call(ctx, echoRequest(2, nil, 0), time.Second, 1)
	if res.Code != 503 || res.Headers.Get("Grpc-Status") != "14" || res.Headers.Get("X-Why") != "overloaded" || !strings.Contains(res.Error, "UNAVAILABLE") {
		t.Errorf("UNAVAILABLE: code %d, error %q, headers %v", res.Code, res.Error, res.Headers)
	}

	start := time.Now()
	res = g.call(ctx, echoRequest(3, nil, 100*time.Millisecond), time.Second, 2)
	if res.Code != 0 || res.Headers != nil || !strings.Contains(res.Error, "DEADLINE_EXCEEDED") || !strings.Contains(res.Error, "deadline exceeded") {
		t.Errorf("deadline: code %d, error %q, headers %v", res.Code, res.Error, res.Headers)
	}
	if took := time.Since(start); took > 900*time.Millisecond {
		t.Errorf("deadline 100ms: the call took %v (the load's timeout was used?)", took)
	}

	res = g.call(ctx, plan.Request{Method: "POST", Path: "/test.Echo/Say", Body: []byte(`{"n": "x"}`), GRPC: &plan.GRPCCall{}}, time.Second, 3)
	if res.Code != 0 || !strings.Contains(res.Error, "does not fit test.Word") {
		t.Errorf("a message that does not fit: code %d, error %q", res.Code, res.Error)
	}
}

// TestGRPCAttack: calls are sent at the pacer's rate for the duration,
// numbered in the order they are sent, and the attack ends with the last
// answer; Stop ends it early.
func TestGRPCAttack(t *testing.T) {
	addr := startEcho(t)
	ctx := context.Background()
	g, err := openGRPC(ctx, addr, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	next := func() plan.Request { return echoRequest(1, nil, 0) }
	l := plan.Load{Timeout: plan.Duration(time.Second), Workers: 2, MaxWorkers: 20}
	a := newGRPCAttack(g, next, l)
	seen := map[uint64]bool{}
	for res := range a.Attack(ctx, vegeta.Rate{Freq: 200, Per: time.Second}, 500*time.Millisecond) {
		if res.Code != 200 {
			t.Fatalf("call %d: %d %s", res.Seq, res.Code, res.Error)
		}
		seen[res.Seq] = true
	}
	if len(seen) < 95 || len(seen) > 101 {
		t.Errorf("%d calls in 500ms at 200/s, want 100", len(seen))
	}
	for i := range uint64(len(seen)) {
		if !seen[i] {
			t.Fatalf("call %d missing from %d", i, len(seen))
		}
	}

	a = newGRPCAttack(g, next, l)
	results := a.Attack(ctx, vegeta.Rate{Freq: 100, Per: time.Second}, time.Hour)
	<-results
	a.Stop()
	done := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-results:
			if !ok {
				return
			}
		case <-done:
			t.Fatal("the attack did not end after Stop")
		}
	}
}
