// Command grpcservice is a small gRPC service for chaoskit's tests, not the
// demo: one unary method, fixture.Items/GetItem, with server reflection
// and the standard health service (grpc.health.v1, SERVING for "" and
// fixture.Items) registered, and GET /healthz over HTTP for readiness.
// With --listen "" it serves no HTTP at all (a gRPC-only service); with
// --no-health it registers no health service, so Health/Check answers
// UNIMPLEMENTED. With --cert and --key it serves gRPC over TLS with that
// certificate (the HTTP listener stays plain). Its messages are
// defined here as descriptors (no generated code):
//
//	message GetItemRequest { int32 id = 1; }
//	message Item { int32 id = 1; string name = 2; string tenant = 3; }
//	service Items { rpc GetItem(GetItemRequest) returns (Item); }
//
// GetItem answers Item{id, name: "item-ID", tenant: the x-tenant metadata}
// with the header x-source: primary. With --unavailable it answers every
// call UNAVAILABLE instead (a broken variant); with --descriptors FILE it
// writes its FileDescriptorSet there and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func field(name string, n int32, t descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
	return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: t.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String(name)}
}

// fileProto is the service's .proto file, as a descriptor.
var fileProto = &descriptorpb.FileDescriptorProto{
	Name:    proto.String("fixture/items.proto"),
	Package: proto.String("fixture"),
	Syntax:  proto.String("proto3"),
	MessageType: []*descriptorpb.DescriptorProto{
		{Name: proto.String("GetItemRequest"), Field: []*descriptorpb.FieldDescriptorProto{
			field("id", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32)}},
		{Name: proto.String("Item"), Field: []*descriptorpb.FieldDescriptorProto{
			field("id", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32),
			field("name", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING),
			field("tenant", 3, descriptorpb.FieldDescriptorProto_TYPE_STRING)}},
	},
	Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Items"), Method: []*descriptorpb.MethodDescriptorProto{
		{Name: proto.String("GetItem"), InputType: proto.String(".fixture.GetItemRequest"), OutputType: proto.String(".fixture.Item")}}}},
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address (GET /healthz); empty: serve no HTTP")
	noHealth := flag.Bool("no-health", false, "register no gRPC health service")
	grpcAddr := flag.String("grpc", "127.0.0.1:9090", "gRPC address")
	unavailable := flag.Bool("unavailable", false, "answer every call UNAVAILABLE")
	descriptors := flag.String("descriptors", "", "write the FileDescriptorSet to this file and exit")
	cert := flag.String("cert", "", "serve gRPC over TLS with this certificate file (PEM)")
	key := flag.String("key", "", "the certificate's key file (PEM)")
	flag.Parse()

	if *descriptors != "" {
		b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fileProto}})
		if err == nil {
			err = writeNew(*descriptors, b)
		}
		if err != nil {
			log.Fatal(err)
		}
		return
	}
	fd, err := protodesc.NewFile(fileProto, protoregistry.GlobalFiles)
	if err != nil {
		log.Fatal(err)
	}
	// Reflection serves the descriptors of protoregistry.GlobalFiles.
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		log.Fatal(err)
	}
	in, out := fd.Messages().ByName("GetItemRequest"), fd.Messages().ByName("Item")
	getItem := func(ctx context.Context, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		if *unavailable {
			return nil, status.Error(codes.Unavailable, "the fixture is unavailable")
		}
		if err := grpc.SetHeader(ctx, metadata.Pairs("x-source", "primary")); err != nil {
			return nil, err
		}
		id := req.Get(in.Fields().ByName("id")).Int()
		res := dynamicpb.NewMessage(out)
		res.Set(out.Fields().ByName("id"), protoreflect.ValueOfInt32(int32(id)))
		res.Set(out.Fields().ByName("name"), protoreflect.ValueOfString(fmt.Sprintf("item-%d", id)))
		if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("x-tenant")) > 0 {
			res.Set(out.Fields().ByName("tenant"), protoreflect.ValueOfString(md.Get("x-tenant")[0]))
		}
		return res, nil
	}
	var opts []grpc.ServerOption
	if *cert != "" {
		creds, err := credentials.NewServerTLSFromFile(*cert, *key)
		if err != nil {
			log.Fatal(err)
		}
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(&grpc.ServiceDesc{
		ServiceName: "fixture.Items",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "GetItem", Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			req := dynamicpb.NewMessage(in)
			if err := dec(req); err != nil {
				return nil, err
			}
			if icpt == nil {
				return getItem(ctx, req)
			}
			info := &grpc.UnaryServerInfo{FullMethod: "/fixture.Items/GetItem"}
			return icpt(ctx, req, info, func(ctx context.Context, r any) (any, error) { return getItem(ctx, r.(*dynamicpb.Message)) })
		}}},
	}, struct{}{})
	reflection.Register(srv)
	if !*noHealth {
		hs := health.NewServer()
		hs.SetServingStatus("fixture.Items", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
	}

	lis, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		log.Fatal(err)
	}
	if *listen == "" {
		log.Printf("gRPC on %s, no HTTP", *grpcAddr)
		log.Fatal(srv.Serve(lis))
	}
	go func() { log.Fatal(srv.Serve(lis)) }()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	log.Printf("gRPC on %s, HTTP on %s", *grpcAddr, *listen)
	log.Fatal(http.ListenAndServe(*listen, mux))
}

// writeNew writes b to a file that must not exist yet: a name already
// taken, a symlink planted there included, is an error, never followed.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
