// Command _stock is a gRPC dependency of the truth corpus: truth.Stock/Get
// answers how many of an item are in stock, truth.Stock/Reserve takes one.
// It knows nothing of faults: the gRPC proxy between it and the service
// makes them.
//
//	message Item { int32 id = 1; }
//	message Level { int32 id = 1; int32 count = 2; }
//	service Stock { rpc Get(Item) returns (Level); rpc Reserve(Item) returns (Level); }
package main

import (
	"context"
	"flag"
	"log"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

func field(name string, n int32) *descriptorpb.FieldDescriptorProto {
	return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum(),
		Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String(name)}
}

var fileProto = &descriptorpb.FileDescriptorProto{
	Name: proto.String("truth/stock.proto"), Package: proto.String("truth"), Syntax: proto.String("proto3"),
	MessageType: []*descriptorpb.DescriptorProto{
		{Name: proto.String("Item"), Field: []*descriptorpb.FieldDescriptorProto{field("id", 1)}},
		{Name: proto.String("Level"), Field: []*descriptorpb.FieldDescriptorProto{field("id", 1), field("count", 2)}},
	},
	Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Stock"), Method: []*descriptorpb.MethodDescriptorProto{
		{Name: proto.String("Get"), InputType: proto.String(".truth.Item"), OutputType: proto.String(".truth.Level")},
		{Name: proto.String("Reserve"), InputType: proto.String(".truth.Item"), OutputType: proto.String(".truth.Level")}}}},
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9092", "address to listen on")
	flag.Parse()
	fd, err := protodesc.NewFile(fileProto, protoregistry.GlobalFiles)
	if err != nil {
		log.Fatal(err)
	}
	in, out := fd.Messages().ByName("Item"), fd.Messages().ByName("Level")
	answer := func(count func(id int32) int32) grpc.MethodHandler {
		return func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			req := dynamicpb.NewMessage(in)
			if err := dec(req); err != nil {
				return nil, err
			}
			id := int32(req.Get(in.Fields().ByName("id")).Int())
			res := dynamicpb.NewMessage(out)
			res.Set(out.Fields().ByName("id"), protoreflect.ValueOfInt32(id))
			res.Set(out.Fields().ByName("count"), protoreflect.ValueOfInt32(count(id)))
			return res, nil
		}
	}
	srv := grpc.NewServer()
	srv.RegisterService(&grpc.ServiceDesc{ServiceName: "truth.Stock", HandlerType: (*any)(nil), Methods: []grpc.MethodDesc{
		{MethodName: "Get", Handler: answer(func(id int32) int32 { return id % 7 })},
		{MethodName: "Reserve", Handler: answer(func(id int32) int32 { return max(id%7-1, 0) })},
	}}, struct{}{})
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(srv.Serve(lis))
}
