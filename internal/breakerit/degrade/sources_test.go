package degrade_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/chaoskit/chaoskit/breakerimpl/degrade"
	"github.com/chaoskit/chaoskit/internal/testserver"
)

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
	}
}

// The switch follows a PromQL expression on a real Prometheus server
// (Debian's), which scrapes the service's error ratio: over 15 % it
// engages, back at 0 it releases.
func TestPromQLSignalOnPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	ratio := prometheus.NewGauge(prometheus.GaugeOpts{Name: "shop_db_error_ratio", Help: "test"})
	reg.MustRegister(ratio)
	metrics := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer metrics.Close()
	prom := testserver.StartPrometheus(t, strings.TrimPrefix(metrics.URL, "http://"))

	pq := degrade.NewPromQL(degrade.PromQLSettings{URL: prom.URL(), Query: `max(shop_db_error_ratio)`, Every: 100 * time.Millisecond})
	defer pq.Close()
	sw := degrade.New(degrade.Settings{Name: "db-errors", Signal: pq.Signal, Threshold: 0.15, Release: 0.05, Interval: 10 * time.Millisecond})
	if !math.IsNaN(pq.Signal()) && pq.Signal() != 0 {
		t.Fatalf("before any scrape: %v", pq.Signal())
	}
	ratio.Set(0.3)
	eventually(t, "the switch engages at 30 % errors", func() bool { return sw.Engaged() })
	if pq.Signal() != 0.3 || pq.Err() != nil {
		t.Fatalf("signal %v, err %v", pq.Signal(), pq.Err())
	}
	ratio.Set(0)
	eventually(t, "the switch releases at 0 %", func() bool { return !sw.Engaged() })

	bad := degrade.NewPromQL(degrade.PromQLSettings{URL: prom.URL(), Query: `shop_db_error_ratio +`, Every: 50 * time.Millisecond})
	defer bad.Close()
	eventually(t, "a bad expression is an error", func() bool { return bad.Err() != nil })
	if !math.IsNaN(bad.Signal()) {
		t.Fatalf("bad expression signal %v, want NaN", bad.Signal())
	}
}

// An Alertmanager webhook engages the switch while its alert fires.
func TestAlertsWebhook(t *testing.T) {
	alerts := &degrade.Alerts{Name: "DBErrorRateHigh", Token: "tok"}
	sw := degrade.New(degrade.Settings{Name: "db", Signal: alerts.Signal, Threshold: 0.5, Interval: time.Millisecond})
	srv := httptest.NewServer(alerts)
	defer srv.Close()
	send := func(status, token string) int {
		body := `{"version":"4","status":"` + status + `","receiver":"shop","alerts":[` +
			`{"status":"` + status + `","labels":{"alertname":"DBErrorRateHigh","service":"shop"},"fingerprint":"a1b2"},` +
			`{"status":"firing","labels":{"alertname":"SomethingElse"},"fingerprint":"ffff"}]}`
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := send("firing", "wrong"); code != 401 || sw.Engaged() {
		t.Fatalf("wrong token: %d, engaged %v", code, sw.Engaged())
	}
	if code := send("firing", "tok"); code != 204 || alerts.Signal() != 1 {
		t.Fatalf("firing: %d, signal %v", code, alerts.Signal())
	}
	eventually(t, "engaged while the alert fires", sw.Engaged)
	if code := send("resolved", "tok"); code != 204 || alerts.Signal() != 0 {
		t.Fatalf("resolved: %d, signal %v", code, alerts.Signal())
	}
	eventually(t, "released once it is resolved", func() bool { return !sw.Engaged() })
}

// The HTTP toggle forces the switch, for loopback callers with the token.
func TestToggle(t *testing.T) {
	sw := degrade.New(degrade.Settings{Name: "db", Signal: func() float64 { return 0 }, Threshold: 1, Interval: time.Millisecond})
	h := degrade.Toggle(sw, "tok")
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(path, token string) int {
		req, _ := http.NewRequest("POST", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/engage", ""); code != 401 || sw.Engaged() {
		t.Fatalf("no token: %d", code)
	}
	if code := post("/engage", "tok"); code != 200 || !sw.Engaged() {
		t.Fatalf("engage: %d %v", code, sw.Engaged())
	}
	if code := post("/automatic", "tok"); code != 200 {
		t.Fatalf("automatic: %d", code)
	}
	eventually(t, "released by the signal once automatic", func() bool { return !sw.Engaged() })
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/engage", nil) // from 192.0.2.1
	req.Header.Set("Authorization", "Bearer tok")
	h.ServeHTTP(rec, req)
	if rec.Code != 403 || sw.Engaged() {
		t.Fatalf("from off loopback: %d %v", rec.Code, sw.Engaged())
	}
}
