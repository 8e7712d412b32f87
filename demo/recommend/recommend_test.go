package recommend

import (
	"context"
	"fmt"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/chaoskit/chaoskit/breakerimpl"
	"github.com/chaoskit/chaoskit/breakerimpl/grpcx"
	"github.com/chaoskit/chaoskit/demo/recommend/recommendpb"
	"github.com/chaoskit/chaoskit/inject"
)

// The service answers the same over both of its paths, over loopback.
func TestUpstreamOverBothPaths(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	u := NewUpstream(200)
	addrs, wait, err := Start(ctx, u, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		wait()
	}()
	for _, overHTTP := range []bool{false, true} {
		f := grpcx.NewHTTPFallback(grpcx.HTTPFallbackSettings{BaseURL: addrs.HTTP, Health: never{overHTTP}})
		cc, err := grpc.NewClient(addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUnaryInterceptor(f.Unary))
		if err != nil {
			t.Fatal(err)
		}
		c := recommendpb.NewRecommendationsClient(cc)
		res, err := grpcx.Call(context.Background(), c.Get, &recommendpb.GetRequest{ProductId: 7})
		want := breakerimpl.SourcePrimary
		if overHTTP {
			want = grpcx.SourceHTTP
		}
		l := FromProto(res.Value)
		if err != nil || res.Source != want || l.ProductID != 7 || len(l.Items) != 4 {
			t.Fatalf("over HTTP %v: %+v %+v, %v", overHTTP, res, l, err)
		}
		for _, it := range l.Items {
			if it < 1 || it > 200 || it == 7 {
				t.Errorf("item %d out of range or the product itself", it)
			}
		}
		if _, err := c.Get(context.Background(), &recommendpb.GetRequest{}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("over HTTP %v, bad id: %v", overHTTP, err)
		}
		cc.Close()
		f.Close()
	}
	if u.Calls() != 4 {
		t.Errorf("calls = %d", u.Calls())
	}
}

// never is a Health that says unhealthy when down is set.
type never struct{ down bool }

func (n never) Healthy() bool { return !n.down }

// inject writes out gRPC's codes so as not to depend on grpc; they must be
// grpc's.
func TestInjectKnowsGRPCsCodes(t *testing.T) {
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		name := inject.GRPCCodeName(uint32(c))
		if c == codes.OK {
			continue
		}
		code, _, err := inject.ParseGRPCStatus(name)
		if err != nil || codes.Code(code) != c {
			t.Errorf("%v: inject names it %q, which parses to %d, %v", c, name, code, err)
		}
		if code, _, _ := inject.ParseGRPCStatus(c.String()); codes.Code(code) != c {
			t.Errorf("grpc's own name %q parses to %d", c.String(), code)
		}
	}
	if got := len(inject.GRPCCodeNames()); got != int(codes.Unauthenticated)+1 {
		t.Errorf("inject has %d codes", got)
	}
	st := grpcx.StatusOf(fmt.Errorf("wrapped: %w", &inject.GRPCStatusError{Code: uint32(codes.Unavailable), Message: "down"}))
	if st.Code() != codes.Unavailable || st.Message() != "down" {
		t.Errorf("grpcx makes %v of an inject fault", st)
	}
}
