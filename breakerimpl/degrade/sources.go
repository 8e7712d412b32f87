package degrade

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds signals from outside the process, so that the switch can
// be driven as seed 003 asks ("error rate over 15 % for 60 s"): the value
// of a PromQL expression on a Prometheus server, the firing alerts an
// Alertmanager sends to a webhook, and an operator's HTTP toggle.

// DefaultPromQLEvery is the Every of PromQLSettings that leave it zero.
const DefaultPromQLEvery = 5 * time.Second

// PromQLSettings configures a PromQL signal. URL and Query are required.
type PromQLSettings struct {
	// URL is the Prometheus server's base URL, such as
	// "http://127.0.0.1:9090".
	URL string
	// Query is a PromQL expression whose value is one number: a scalar, or
	// an instant vector of one series, such as
	// `sum(rate(http_requests_total{code=~"5.."}[1m])) / sum(rate(http_requests_total[1m]))`.
	Query string
	// Every is how often it is queried. Zero or less means
	// DefaultPromQLEvery.
	Every time.Duration
	// Client sends the queries; nil means a client with a timeout of
	// Every.
	Client *http.Client
}

// PromQL is a Switch's Signal read from a Prometheus server: a goroutine
// queries the expression every Every (the instant query API,
// /api/v1/query) and Signal returns the last answer at once. Until the
// first answer, while the server cannot be reached and while the
// expression has no value (no series, or more than one), Signal is NaN,
// which changes nothing: the switch keeps its state rather than act on a
// guess. Make one with NewPromQL, and Close it.
type PromQL struct {
	cfg   PromQLSettings
	value atomic.Uint64 // math.Float64bits
	mu    sync.Mutex
	err   error
	stop  chan struct{}
	done  chan struct{}
}

// NewPromQL starts querying; the first query is sent at once.
func NewPromQL(s PromQLSettings) *PromQL {
	if s.Every <= 0 {
		s.Every = DefaultPromQLEvery
	}
	if s.Client == nil {
		s.Client = &http.Client{Timeout: s.Every}
	}
	p := &PromQL{cfg: s, stop: make(chan struct{}), done: make(chan struct{})}
	p.value.Store(math.Float64bits(math.NaN()))
	go p.loop()
	return p
}

// Signal returns the expression's last value, or NaN (see PromQL).
func (p *PromQL) Signal() float64 { return math.Float64frombits(p.value.Load()) }

// Err returns the error of the last query, nil when it gave a value.
func (p *PromQL) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Close stops querying.
func (p *PromQL) Close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *PromQL) loop() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Every)
	defer t.Stop()
	for {
		v, err := p.query()
		if err != nil {
			v = math.NaN()
		}
		p.value.Store(math.Float64bits(v))
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// query asks the instant query API for the expression's value.
func (p *PromQL) query() (float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.URL+"/api/v1/query?query="+url.QueryEscape(p.cfg.Query), nil)
	if err != nil {
		return 0, err
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return 0, fmt.Errorf("degrade: prometheus answer %s: %w", resp.Status, err)
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("degrade: prometheus: %s", body.Error)
	}
	var sample [2]any // [time, "value"]
	switch body.Data.ResultType {
	case "scalar":
		if err := json.Unmarshal(body.Data.Result, &sample); err != nil {
			return 0, err
		}
	case "vector":
		var series []struct {
			Value [2]any `json:"value"`
		}
		if err := json.Unmarshal(body.Data.Result, &series); err != nil {
			return 0, err
		}
		if len(series) != 1 {
			return 0, fmt.Errorf("degrade: %q has %d series, want one", p.cfg.Query, len(series))
		}
		sample = series[0].Value
	default:
		return 0, fmt.Errorf("degrade: %q gives a %s, want a scalar or one series", p.cfg.Query, body.Data.ResultType)
	}
	s, _ := sample[1].(string)
	return strconv.ParseFloat(s, 64)
}

// Alerts is a Switch's Signal fed by an Alertmanager webhook receiver
// (webhook_configs, payload version 4): Signal is 1 while at least one
// alert named Name (its alertname label) is firing, 0 otherwise. Serve it
// as an http.Handler at the URL the receiver posts to. The zero value
// needs Name set; Token, if set, must come as "Authorization: Bearer
// TOKEN" (Alertmanager's http_config.authorization).
type Alerts struct {
	Name  string
	Token string

	mu     sync.Mutex
	firing map[string]bool // by fingerprint (or labels, when none)
}

// Signal returns 1 while an alert named Name fires, else 0.
func (a *Alerts) Signal() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.firing) > 0 {
		return 1
	}
	return 0
}

// ServeHTTP takes one webhook notification.
func (a *Alerts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an Alertmanager webhook payload", http.StatusMethodNotAllowed)
		return
	}
	if a.Token != "" && !bearer(r, a.Token) {
		http.Error(w, "a bearer token is required", http.StatusUnauthorized)
		return
	}
	var msg struct {
		Alerts []struct {
			Status      string            `json:"status"`
			Labels      map[string]string `json:"labels"`
			Fingerprint string            `json:"fingerprint"`
		} `json:"alerts"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&msg); err != nil {
		http.Error(w, "not an Alertmanager webhook payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.firing == nil {
		a.firing = map[string]bool{}
	}
	for _, al := range msg.Alerts {
		if al.Labels["alertname"] != a.Name {
			continue
		}
		key := al.Fingerprint
		if key == "" {
			b, _ := json.Marshal(al.Labels)
			key = string(b)
		}
		if al.Status == "firing" {
			a.firing[key] = true
		} else {
			delete(a.firing, key)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// Toggle is an operator's HTTP switch for w: POST …/engage forces the
// fallback, POST …/release forces the dependency, POST …/automatic gives
// the decision back to the signal; each, and GET, answers a ToggleState. It answers
// only requests from a loopback address carrying "Authorization: Bearer
// token" (token must not be empty), since it turns a dependency off.
func Toggle(w *Switch, token string) http.Handler {
	if token == "" {
		panic("degrade: Toggle needs a token")
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !fromLoopback(r) {
			http.Error(rw, "the toggle answers loopback requests only", http.StatusForbidden)
			return
		}
		if !bearer(r, token) {
			http.Error(rw, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			switch last(r.URL.Path) {
			case "engage":
				w.ForceEngage()
			case "release":
				w.ForceRelease()
			case "automatic":
				w.ResumeAutomatic()
			default:
				http.Error(rw, "POST engage, release or automatic", http.StatusNotFound)
				return
			}
		} else if r.Method != http.MethodGet {
			http.Error(rw, "GET the state, or POST engage, release or automatic", http.StatusMethodNotAllowed)
			return
		}
		s := w.Snapshot()
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(ToggleState{Name: s.Name, Engaged: s.Engaged, Override: s.Override})
	})
}

// ToggleState is the answer of a Toggle.
type ToggleState struct {
	Name     string `json:"name"`
	Engaged  bool   `json:"engaged"`
	Override string `json:"override"`
}

func last(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

func bearer(r *http.Request, token string) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) == 1
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
