package recommend

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestUpstreamOverLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	u := NewUpstream(200)
	base, wait, err := Start(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	c := &Client{Base: base, HTTP: &http.Client{Transport: tr, Timeout: time.Second}}
	l, err := c.Get(context.Background(), 7)
	if err != nil || l.ProductID != 7 || len(l.Items) != 4 {
		t.Fatalf("Get = %+v, %v", l, err)
	}
	for _, it := range l.Items {
		if it < 1 || it > 200 || it == 7 {
			t.Errorf("item %d out of range or the product itself", it)
		}
	}
	_, err = c.Get(context.Background(), 0)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 400 {
		t.Errorf("bad id: %v", err)
	}
	if u.Calls() != 2 {
		t.Errorf("calls = %d", u.Calls())
	}
	tr.CloseIdleConnections()
	cancel()
	wait()
}
