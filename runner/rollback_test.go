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
	res, err := Rollback(context.Background(), dir, "", nil)
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
	res, err := Rollback(context.Background(), dir, "", nil)
	if err != nil || len(res) != 1 || res[0].Gone || len(res[0].Disabled) != 1 || res[0].Disabled[0] != "a/b" {
		t.Fatalf("res = %+v, err = %v; want a/b disabled (e/f is not on)", res, err)
	}
	writeRecord(t, dir, faultRecord{Control: srv.URL, Points: []string{"c/d"}})
	if _, err := Rollback(context.Background(), dir, "", nil); err == nil {
		t.Fatal("a refused DELETE did not fail the rollback")
	}
}

// TestAFaultRecordIsReadAsData: a faults.json that is a link (to a
// record of another run, say) or larger than any record is refused by
// name, and what it points to is neither read nor rewritten.
func TestAFaultRecordIsReadAsData(t *testing.T) {
	other := t.TempDir()
	writeRecord(t, other, faultRecord{Control: "http://127.0.0.1:1", Points: []string{"x/y"}})
	before, _ := os.ReadFile(filepath.Join(other, FaultRecord))
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(other, FaultRecord), filepath.Join(dir, FaultRecord)); err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord(filepath.Join(dir, FaultRecord)); err == nil || !strings.Contains(err.Error(), "a symbolic link") {
		t.Errorf("readRecord of a link = %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(other, FaultRecord)); string(after) != string(before) {
		t.Errorf("the linked record changed: %s", after)
	}
	big := filepath.Join(t.TempDir(), FaultRecord)
	f, _ := os.Create(big)
	f.Truncate(maxFaultRecord + 1)
	f.Close()
	if _, err := readRecord(big); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Errorf("readRecord of a huge file = %v", err)
	}
}
