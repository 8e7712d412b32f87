package testserver_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaoskit/chaoskit/internal/testserver"
)

// redisCmd sends one inline command and returns the first reply line.
func redisCmd(t *testing.T, addr, cmd string) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	buf := make([]byte, 256)
	n, err := conn.Read(buf)
	return strings.TrimSpace(string(buf[:n])), err
}

// processGone reports whether the process pid has ended (a zombie not yet
// reaped by init counts as ended), waiting up to 1 s for it (a SIGKILL takes effect at once; init may take a moment to reap).
func processGone(pid int) bool {
	deadline := time.Now().Add(time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		// The state follows the command, which is in parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRedisKillAndStart(t *testing.T) {
	r := testserver.StartRedis(t)
	if got, err := redisCmd(t, r.Addr(), "SET k v"); err != nil || got != "+OK" {
		t.Fatalf("SET = %q, %v", got, err)
	}
	r.Kill()
	if r.Running() {
		t.Fatal("Running after Kill")
	}
	if _, err := redisCmd(t, r.Addr(), "PING"); err == nil {
		t.Fatal("a killed redis still answers")
	}
	addr := r.Addr()
	r.Start()
	if r.Addr() != addr {
		t.Fatalf("restarted on %s, was %s", r.Addr(), addr)
	}
	// Nothing is saved: the key is gone with the process.
	if got, err := redisCmd(t, r.Addr(), "GET k"); err != nil || got != "$-1" {
		t.Fatalf("GET after restart = %q, %v; want $-1 (no persistence)", got, err)
	}
}

func TestPostgresKeepsCommittedDataAcrossKill(t *testing.T) {
	p := testserver.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE t (v int); INSERT INTO t VALUES (42)`); err != nil {
		t.Fatal(err)
	}
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		t.Fatal(err)
	}
	p.Kill()
	if !processGone(backend) {
		t.Errorf("backend %d survived the kill of its server's process group", backend)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("a connection to a killed postgres still answers")
	}
	conn.Close(ctx)

	p.Start()
	conn, err = pgx.Connect(ctx, p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, `SELECT v FROM t`).Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v = %d, %v; want the committed 42", v, err)
	}
	if os.Geteuid() == 0 {
		var user string
		if out, err := exec.Command("ps", "-o", "user=", "-p", strconv.Itoa(serverPID(t, ctx, conn))).Output(); err == nil {
			user = strings.TrimSpace(string(out))
		}
		if user != "postgres" {
			t.Errorf("run as root, the server runs as %q, want postgres", user)
		}
	}
}

func serverPID(t *testing.T, ctx context.Context, conn *pgx.Conn) int {
	t.Helper()
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestStopLeavesNoProcess(t *testing.T) {
	var pid int
	t.Run("redis", func(t *testing.T) {
		r := testserver.StartRedis(t)
		out, err := exec.Command("sh", "-c", "ss -ltnpH 'sport = :"+strconv.Itoa(r.Port())+"'").Output()
		if err != nil {
			t.Skip("ss unavailable")
		}
		_, after, ok := strings.Cut(string(out), "pid=")
		if !ok {
			t.Fatalf("no listener pid in %q", out)
		}
		pid, _ = strconv.Atoi(strings.SplitN(after, ",", 2)[0])
	})
	// The subtest's cleanup stopped the server.
	if pid == 0 || !processGone(pid) {
		t.Fatalf("redis-server %d still runs after its test ended", pid)
	}
}
