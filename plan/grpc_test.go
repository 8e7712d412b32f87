package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

const grpcScenario = `name: grpc
target:
  command:
    argv: [./svc, --grpc, "127.0.0.1:{port:grpc}"]
  url: http://127.0.0.1:{port}
GRPC
load:
  rate: 10/s
  requests:
REQUESTS
phases:
  - {name: p, duration: 1s}
`

// itemsDescriptors is a FileDescriptorSet of one service,
// fixture.Items/GetItem(GetItemRequest{int32 id}) returns Item, and a
// streaming method fixture.Items/Watch.
func itemsDescriptors(t *testing.T) []byte {
	t.Helper()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	fd := &descriptorpb.FileDescriptorProto{
		Name: proto.String("items.proto"), Package: proto.String("fixture"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("GetItemRequest"), Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("id"), JsonName: proto.String("id"), Number: proto.Int32(1), Label: opt, Type: descriptorpb.FieldDescriptorProto_TYPE_INT32.Enum()}}},
			{Name: proto.String("Item")},
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Items"), Method: []*descriptorpb.MethodDescriptorProto{
			{Name: proto.String("GetItem"), InputType: proto.String(".fixture.GetItemRequest"), OutputType: proto.String(".fixture.Item")},
			{Name: proto.String("Watch"), InputType: proto.String(".fixture.GetItemRequest"), OutputType: proto.String(".fixture.Item"), ServerStreaming: proto.Bool(true)},
		}}},
	}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGRPCRequests: a grpc: request template is read with its message (a
// mapping becomes JSON; its templates kept), checked against the
// scenario's descriptor set when it names one, and what cannot work is
// refused at its place with a hint: no target.grpc, a non-loopback
// address, a method that is not package.Service/Method, an unknown
// method, a streaming one, a message that does not fit, HTTP fields on a
// call, a bad metadata key, calls mixed with HTTP requests.
func TestGRPCRequests(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "items.pb"), itemsDescriptors(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "garbage.pb"), []byte("\xff\xff not a descriptor set"), 0o644); err != nil {
		t.Fatal(err)
	}
	const target = `  grpc: {address: "127.0.0.1:{port:grpc}", descriptor_set: items.pb}`
	const call = `    - grpc: {method: fixture.Items/GetItem, message: {id: "{1..50}"}, metadata: {x-tenant: t1}, deadline: 300ms}`
	tests := []struct {
		name, grpc, requests string
		want                 string // "" loads
	}{
		{"by reflection", `  grpc: {address: "127.0.0.1:{port:grpc}"}`, call, ""},
		{"with descriptors", target, call, ""},
		{"a message as JSON text", target, `    - grpc: {method: fixture.Items/GetItem, message: '{"id": 7}'}`, ""},
		{"no target.grpc", "", call, "grpc.yaml:10:13: a grpc: request needs target.grpc"},
		{"not loopback", `  grpc: {address: "10.0.0.1:{port:grpc}"}`, call, `grpc.yaml:6:19: "10.0.0.1" is not a loopback address`},
		{"a URL", `  grpc: {address: "http://127.0.0.1:{port:grpc}"}`, call, `is a URL, not host:port`},
		{"not a method name", target, `    - grpc: {method: GetItem}`, `grpc.yaml:10:22: grpc method "GetItem" is not package.Service/Method (write package.Service/Method`},
		{"an unknown method", target, `    - grpc: {method: fixture.Items/GetIten}`, `grpc.yaml:10:22: grpc service fixture.Items has no method GetIten (did you mean "fixture.Items/GetItem"?)`},
		{"an unknown service", target, `    - grpc: {method: fixture.Itemz/GetItem}`, `grpc.yaml:10:22: the service has no grpc service fixture.Itemz (did you mean "fixture.Items/GetItem"?)`},
		{"a streaming method", target, `    - grpc: {method: fixture.Items/Watch}`, `grpc method fixture.Items/Watch streams (chaoskit calls unary methods)`},
		{"a message that does not fit", target, `    - grpc: {method: fixture.Items/GetItem, message: {ident: 3}}`, `grpc.yaml:10:54: the message does not fit fixture.GetItemRequest`},
		{"a value that does not fit", target, `    - grpc: {method: fixture.Items/GetItem, message: {id: "x{1..3}"}}`, `the message does not fit fixture.GetItemRequest`},
		{"a list for a message", target, `    - grpc: {method: fixture.Items/GetItem, message: [1]}`, `a message must be a mapping`},
		{"a path on a call", target, `    - {path: /x, grpc: {method: fixture.Items/GetItem}}`, `grpc.yaml:10:14: a grpc: request has no path`},
		{"headers on a call", target, `    - {headers: {a: b}, grpc: {method: fixture.Items/GetItem}}`, `a grpc: request has no headers (send them as grpc.metadata)`},
		{"a reserved metadata key", target, `    - grpc: {method: fixture.Items/GetItem, metadata: {grpc-timeout: 1S}}`, `metadata key "grpc-timeout" cannot be sent`},
		{"mixed with HTTP", target, call + "\n    - path: /items", `a load's requests are all grpc: calls or none`},
		{"a missing descriptor set", `  grpc: {address: "127.0.0.1:{port:grpc}", descriptor_set: none.pb}`, call, `grpc.yaml:6:60: cannot read descriptor_set`},
		{"not a descriptor set", `  grpc: {address: "127.0.0.1:{port:grpc}", descriptor_set: garbage.pb}`, call, `is not a FileDescriptorSet`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.NewReplacer("GRPC", tt.grpc, "REQUESTS", tt.requests).Replace(grpcScenario)
			name := filepath.Join(dir, "grpc.yaml")
			if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := LoadFile(name, Options{})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := sc.Load.Requests[0]
			if r.Method != "POST" || r.GRPC.Path() != "/fixture.Items/GetItem" {
				t.Errorf("method %q, path %q", r.Method, r.GRPC.Path())
			}
			gen, err := NewGenerator(sc.Load, nil)
			if err != nil {
				t.Fatal(err)
			}
			q := gen.Next()
			if q.GRPC == nil || q.Path != "/fixture.Items/GetItem" || q.Method != "POST" {
				t.Errorf("generated %+v", q)
			}
			if strings.Contains(tt.requests, "{1..50}") {
				if string(q.Body) != `{"id":"1"}` || q.Headers["x-tenant"] != "t1" || q.GRPC.Deadline.D().Milliseconds() != 300 {
					t.Errorf("generated message %s, metadata %v, deadline %v", q.Body, q.Headers, q.GRPC.Deadline)
				}
				if q = gen.Next(); string(q.Body) != `{"id":"2"}` {
					t.Errorf("second message %s", q.Body)
				}
			}
			if got := sc.GRPCServices(); len(got) != 1 || got[0] != "fixture.Items" {
				t.Errorf("services %v", got)
			}
		})
	}
}
