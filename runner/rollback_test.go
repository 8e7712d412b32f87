package runner

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func writeRecord(t *testing.T, dir string, fr faultRecord) {
	t.Helper()
	data, err := json.Marshal(fr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FaultRecord), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A service that has stopped refuses connections: its faults went with
// its process, so rollback has nothing to undo and says so.
func TestRollbackOfAStoppedService(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	writeRecord(t, dir, faultRecord{Control: "http://" + addr, Points: []string{"x/y"}})
	res, err := Rollback(context.Background(), dir, "")
	if err != nil || len(res) != 1 || !res[0].Gone {
		t.Fatalf("res = %+v, err = %v; want one result with Gone and no error", res, err)
	}
	fr, err := readRecord(filepath.Join(dir, FaultRecord))
	if err != nil || len(fr.Points) != 0 {
		t.Errorf("record after rollback = %+v, %v; want no point left", fr, err)
	}
}

// A live endpoint gets a DELETE for each recorded point it lists as on;
// one that answers with an error fails the rollback.
func TestRollbackDisablesWhatIsOn(t *testing.T) {
	var mu sync.Mutex
	on := map[string]string{"a/b": "return(1)", "c/d": "return(2)"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.Method {
		case http.MethodGet:
			for p, term := range on {
				_, _ = w.Write([]byte(p + "=" + term + "\n"))
			}
		case http.MethodDelete:
			p := strings.TrimPrefix(r.URL.Path, "/")
			if p == "c/d" {
				http.Error(w, "refused", http.StatusInternalServerError)
				return
			}
			delete(on, p)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeRecord(t, dir, faultRecord{Control: srv.URL, Points: []string{"a/b", "e/f"}})
	res, err := Rollback(context.Background(), dir, "")
	if err != nil || len(res) != 1 || res[0].Gone || len(res[0].Disabled) != 1 || res[0].Disabled[0] != "a/b" {
		t.Fatalf("res = %+v, err = %v; want a/b disabled (e/f is not on)", res, err)
	}
	writeRecord(t, dir, faultRecord{Control: srv.URL, Points: []string{"c/d"}})
	if _, err := Rollback(context.Background(), dir, ""); err == nil {
		t.Fatal("a refused DELETE did not fail the rollback")
	}
}
