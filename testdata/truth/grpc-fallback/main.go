// Command grpc-fallback serves truth.Items/Get over gRPC (with server
// reflection) from its upstream, and GET /healthz over HTTP. When the
// upstream fails, the correct variant answers OK from the copy it last got
// (x-source: cache); the broken variant answers UNAVAILABLE.
//
//	message GetRequest { int32 id = 1; }
//	message Item { int32 id = 1; string name = 2; }
//	service Items { rpc Get(GetRequest) returns (Item); }
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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

var fileProto = &descriptorpb.FileDescriptorProto{
	Name: proto.String("truth/items.proto"), Package: proto.String("truth"), Syntax: proto.String("proto3"),
	MessageType: []*descriptorpb.DescriptorProto{
		{Name: proto.String("GetRequest"), Field: []*descriptorpb.FieldDescriptorProto{field("id", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32)}},
		{Name: proto.String("Item"), Field: []*descriptorpb.FieldDescriptorProto{
			field("id", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32), field("name", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING)}},
	},
	Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Items"), Method: []*descriptorpb.MethodDescriptorProto{
		{Name: proto.String("Get"), InputType: proto.String(".truth.GetRequest"), OutputType: proto.String(".truth.Item")}}}},
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address (GET /healthz)")
	grpcAddr := flag.String("grpc", "127.0.0.1:9090", "gRPC address")
	upstream := flag.String("upstream", "127.0.0.1:8081", "the upstream's address")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()

	fd, err := protodesc.NewFile(fileProto, protoregistry.GlobalFiles)
	if err != nil {
		log.Fatal(err)
	}
	if err := protoregistry.GlobalFiles.RegisterFile(fd); err != nil {
		log.Fatal(err)
	}
	in, out := fd.Messages().ByName("GetRequest"), fd.Messages().ByName("Item")
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var mu sync.Mutex
	cache := map[int64]string{}
	get := func(ctx context.Context, id int64) (string, string, error) {
		resp, err := client.Get(fmt.Sprintf("http://%s/item/%d", *upstream, id))
		if err == nil {
			defer resp.Body.Close()
			var item struct{ Name string }
			if err = json.NewDecoder(resp.Body).Decode(&item); err == nil && resp.StatusCode == 200 {
				mu.Lock()
				cache[id] = item.Name
				mu.Unlock()
				return item.Name, "primary", nil
			}
		}
		mu.Lock()
		name, ok := cache[id]
		mu.Unlock()
		if *variant == "correct" && ok {
			return name, "cache", nil
		}
		return "", "", status.Error(codes.Unavailable, "upstream failed")
	}
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{ServiceName: "truth.Items", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{{
		MethodName: "Get",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := dynamicpb.NewMessage(in)
			if err := dec(req); err != nil {
				return nil, err
			}
			id := req.Get(in.Fields().ByName("id")).Int()
			name, source, err := get(ctx, id)
			if err != nil {
				return nil, err
			}
			grpc.SetHeader(ctx, metadata.Pairs("x-source", source))
			res := dynamicpb.NewMessage(out)
			res.Set(out.Fields().ByName("id"), protoreflect.ValueOfInt32(int32(id)))
			res.Set(out.Fields().ByName("name"), protoreflect.ValueOfString(name))
			return res, nil
		}}}}, struct{}{})
	reflection.Register(srv)
	lis, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(srv.Serve(lis)) }()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	log.Fatal(http.ListenAndServe(*listen, mux))
}
