package inject

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/pingcap/failpoint"
)

var tenantSwitch = NewSwitch("tenantQuery")

// tenantServer answers 200, or the status a fault on tenantSwitch gives,
// with its request's context handed to Fire through Middleware.
func tenantServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v, ok := tenantSwitch.Eval(); ok {
			var se *StatusError
			if err := Fire(r.Context(), v); errors.As(err, &se) {
				w.WriteHeader(se.Code)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, h map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMatchFiresForTheNamedRequestsOnly switches on a status fault meant
// for X-Tenant: b and sends requests of tenants a and b, by header and by
// W3C baggage, in parallel: only b's get the fault, and only b's count as
// hits.
func TestMatchFiresForTheNamedRequestsOnly(t *testing.T) {
	term, err := Fault{Action: Status, Value: "503", Match: map[string]string{"X-Tenant": "b"}}.Term(tenantSwitch.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckTerm(term); err != nil {
		t.Fatal(err)
	}
	Arm()
	if err := failpoint.Enable(tenantSwitch.Path(), term); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = failpoint.Disable(tenantSwitch.Path()) })
	srv := tenantServer(t)
	before := Hits()[tenantSwitch.Path()]
	const n = 50
	t.Run("tenants", func(t *testing.T) {
		for _, tt := range []struct {
			name   string
			header map[string]string
			want   int
		}{
			{"a", map[string]string{"X-Tenant": "a"}, 200},
			{"b", map[string]string{"X-Tenant": "b"}, 503},
			{"b in lower case", map[string]string{"x-tenant": "b"}, 503},
			{"b by baggage", map[string]string{"baggage": "user=7,X-Tenant=b;p=1"}, 503},
			{"a by baggage", map[string]string{"baggage": "X-Tenant=a"}, 200},
			{"none", nil, 200},
		} {
			tt := tt // go 1.21 shares the loop variable
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				for i := 0; i < n; i++ {
					if got := get(t, srv.URL, tt.header); got != tt.want {
						t.Fatalf("request %d: status %d, want %d", i, got, tt.want)
					}
				}
			})
		}
	})
	if got := Hits()[tenantSwitch.Path()] - before; got != 3*n {
		t.Errorf("hits %d, want %d (tenant b's requests only): %v", got, 3*n, Hits())
	}
}

// TestMatchWithoutTheRequest checks that a fault meant for some requests
// never fires where the service did not hand the request down (Fire with
// a context without headers), and that DecodeContext agrees with Fire.
func TestMatchWithoutTheRequest(t *testing.T) {
	term, err := Fault{Action: Error, Value: "down", Match: map[string]string{"X-Tenant": "b"}}.Term(pt)
	if err != nil {
		t.Fatal(err)
	}
	value := pt + "|when:X-Tenant=b|error:down"
	if term != `return("`+value+`")` {
		t.Fatalf("term %s", term)
	}
	if err := Fire(context.Background(), value); err != nil {
		t.Errorf("fired without a request: %v", err)
	}
	b := WithRequestHeaders(context.Background(), http.Header{"X-Tenant": {"b"}})
	if err := Fire(b, value); err == nil || err.Error() != "down" {
		t.Errorf("tenant b: %v", err)
	}
	if _, _, ok := DecodeContext(context.Background(), value); ok {
		t.Error("DecodeContext without a request decoded the fault")
	}
	if p, f, ok := DecodeContext(b, value); !ok || p != pt || f.Action != Error || f.Value != "down" {
		t.Errorf("DecodeContext(b) = %q %+v %v", p, f, ok)
	}
	if _, err := (Fault{Action: Error, Count: 3, Match: map[string]string{"X-Tenant": "b"}}).Term(pt); err == nil {
		t.Error("a match with a count was accepted")
	}
}
