package testserver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Redis is a redis-server started for one test.
type Redis struct {
	*Server
}

// StartRedis starts redis-server on a free loopback port, with nothing
// saved to disk (--save "" --appendonly no), and stops it when the test
// ends. It skips the test if redis-server is not installed (fails under CI).
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin := binary(t, "redis-server", "/usr/bin/redis-server")
	dir := t.TempDir()
	s := &Server{
		t: t, name: "redis", port: freePort(t), dir: dir, ready: pingRedis, stopSignal: syscall.SIGTERM,
		argv: func(port int) []string {
			return []string{bin,
				"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--dir", dir,
				"--daemonize", "no", "--loglevel", "warning", "--logfile", "",
			}
		},
	}
	t.Cleanup(s.Stop)
	s.start(true)
	return &Redis{s}
}

// pingRedis sends PING and wants +PONG: accepting connections is not
// enough while Redis loads.
func pingRedis(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if deadline.IsZero() {
		deadline = time.Now().Add(time.Second)
	}
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("%w: PING answered %q", errNotReady, line)
	}
	return nil
}
