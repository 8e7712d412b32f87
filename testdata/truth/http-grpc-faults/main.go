// Command http-grpc-faults serves GET /quote/{id}: an item's price from an
// HTTP dependency (GET /price/{id}) and its stock from a gRPC one
// (truth.Stock/Get), each reached through a proxy, passing the caller's
// X-Tenant on. The correct variant falls back when a dependency fails: the
// last price it got for the item (or none) and an unknown stock level,
// answered 200 with X-Source: fallback. The broken variant answers 502.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
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

// fileProto is the stock service's descriptor, as _stock serves it.
var fileProto = &descriptorpb.FileDescriptorProto{
	Name: proto.String("truth/stock.proto"), Package: proto.String("truth"), Syntax: proto.String("proto3"),
	MessageType: []*descriptorpb.DescriptorProto{
		{Name: proto.String("Item"), Field: []*descriptorpb.FieldDescriptorProto{field("id", 1)}},
		{Name: proto.String("Level"), Field: []*descriptorpb.FieldDescriptorProto{field("id", 1), field("count", 2)}},
	},
	Service: []*descriptorpb.ServiceDescriptorProto{{Name: proto.String("Stock"), Method: []*descriptorpb.MethodDescriptorProto{
		{Name: proto.String("Get"), InputType: proto.String(".truth.Item"), OutputType: proto.String(".truth.Level")}}}},
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	prices := flag.String("prices", "127.0.0.1:8082", "the price service's address (HTTP)")
	stock := flag.String("stock", "127.0.0.1:9092", "the stock service's address (gRPC)")
	variant := flag.String("variant", "correct", "correct or broken")
	flag.Parse()

	fd, err := protodesc.NewFile(fileProto, protoregistry.GlobalFiles)
	if err != nil {
		log.Fatal(err)
	}
	item, level := fd.Messages().ByName("Item"), fd.Messages().ByName("Level")
	conn, err := grpc.NewClient(*stock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var mu sync.Mutex
	lastPrice := map[int]int{}

	price := func(ctx context.Context, id int, tenant string) (int, bool) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/price/%d", *prices, id), nil)
		if tenant != "" {
			req.Header.Set("X-Tenant", tenant)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var p struct{ Price int }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
			return 0, false
		}
		mu.Lock()
		lastPrice[id] = p.Price
		mu.Unlock()
		return p.Price, true
	}
	count := func(ctx context.Context, id int, tenant string) (int, bool) {
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if tenant != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-tenant", tenant)
		}
		req, res := dynamicpb.NewMessage(item), dynamicpb.NewMessage(level)
		req.Set(item.Fields().ByName("id"), protoreflect.ValueOfInt32(int32(id)))
		if err := conn.Invoke(ctx, "/truth.Stock/Get", req, res); err != nil {
			return 0, false
		}
		return int(res.Get(level.Fields().ByName("count")).Int()), true
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /quote/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.Atoi(r.PathValue("id"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		tenant := r.Header.Get("X-Tenant")
		p, pOK := price(r.Context(), id, tenant)
		n, nOK := count(r.Context(), id, tenant)
		source := "primary"
		if !pOK || !nOK {
			if *variant != "correct" {
				http.Error(w, "a dependency failed", http.StatusBadGateway)
				return
			}
			source = "fallback"
			if !pOK {
				mu.Lock()
				p = lastPrice[id]
				mu.Unlock()
			}
			if !nOK {
				n = -1 // unknown
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Source", source)
		fmt.Fprintf(w, "{\"id\":%d,\"price\":%d,\"stock\":%d}\n", id, p, n)
	})
	log.Fatal(http.ListenAndServe(*listen, mux))
}
