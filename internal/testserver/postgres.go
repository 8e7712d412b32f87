package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chaoskit/chaoskit/internal/pgbin"
)

// Postgres is a PostgreSQL server started for one test, with a database
// named postgres that the user postgres may use without a password.
type Postgres struct {
	*Server
}

// DSN returns a connection string for the postgres database as the
// postgres user, without TLS.
func (p *Postgres) DSN() string {
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable", p.Addr())
}

// StartPostgres creates a database cluster with initdb in the test's
// temporary directory, starts postgres on a free loopback port (TCP only:
// no Unix socket), and stops it when the test ends. It skips the test if
// PostgreSQL is not installed (fails under CI).
//
// Run as root, the server runs as the unprivileged user postgres (Debian's
// package creates it; initdb refuses to run as root). fsync and
// full_page_writes are off, for speed: a killed server still keeps every
// committed transaction, since a commit waits for its WAL to reach the
// operating system, whose page cache survives the process; only a machine
// crash would lose data. (synchronous_commit stays on: off, a commit
// returns before its WAL leaves the server's memory, and a kill loses it.)
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	bindir := pgbin.Dir()
	initdb := binary(t, "initdb", filepath.Join(bindir, "initdb"))
	postgres := binary(t, "postgres", filepath.Join(bindir, "postgres"))

	base := t.TempDir()
	creds := unprivileged(t)
	if creds != nil {
		base = reachableDir(t, base)
	}
	data := filepath.Join(base, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if creds != nil {
		if err := os.Chown(data, int(creds.Uid), int(creds.Gid)); err != nil {
			t.Fatalf("testserver: hand the data directory to postgres: %v", err)
		}
	}
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions")
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: creds}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testserver: initdb: %v\n%s", err, out)
	}
	s := &Server{
		t: t, name: "postgres", port: freePort(t), dir: base, creds: creds, ready: pingPostgres,
		// SIGINT is postgres's fast shutdown: sessions are ended, nothing
		// waits for clients.
		stopSignal: syscall.SIGINT,
		argv: func(port int) []string {
			return []string{postgres, "-D", data, "-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
				"-c", "fsync=off", "-c", "full_page_writes=off",
				"-c", "max_connections=50", "-c", "shared_buffers=16MB",
			}
		},
	}
	t.Cleanup(s.Stop)
	s.start(true)
	return &Postgres{s}
}

// unprivileged returns the credentials of the postgres user when the test
// runs as root, nil otherwise.
func unprivileged(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("testserver: running as root, postgres must run as the user postgres, which does not exist (%v); Debian's postgresql package creates it", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// reachableDir returns a directory of the test's that another user can
// reach: base (from t.TempDir) once base and its parent, both made for
// this test with mode 0700, are opened to be traversed, if every directory
// above them already may be; otherwise (TMPDIR under /root, say) a new
// directory in /tmp, removed when the test ends.
func reachableDir(t testing.TB, base string) string {
	t.Helper()
	if traversable(filepath.Dir(filepath.Dir(base))) {
		for _, d := range []string{base, filepath.Dir(base)} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		return base
	}
	dir, err := os.MkdirTemp("/tmp", "chaoskit-postgres-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// traversable reports whether every directory from dir up to / may be
// searched by any user.
func traversable(dir string) bool {
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// pingPostgres opens and closes one connection.
func pingPostgres(ctx context.Context, addr string) error {
	conn, err := pgconn.Connect(ctx, fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=1", addr))
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}
