package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tlsScenario = `name: tls
target:
  command:
    argv: [./svc, --listen, "127.0.0.1:{port}", ARGS]
  url: URL
TLS
load:
  rate: 10/s
  requests: [{path: /}]
phases:
  - {name: p, duration: 1s}
`

// TestTargetTLS: target.tls is read with the scenario (the CA file's
// certificates), and what cannot work is refused with its place and a
// hint: tls on an http:// url, ca and generate at once, neither, a
// generated certificate for a target chaoskit does not start, a file
// that holds no certificate, a {tls:...} placeholder without generate.
func TestTargetTLS(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "garbage.pem"), []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, url, tls, args string
		want                 string // "" loads
	}{
		{"generated", "https://127.0.0.1:{port}", "  tls: {generate: true}", `"--cert={tls:cert}", "--key={tls:key}"`, ""},
		{"on http", "http://127.0.0.1:{port}", "  tls: {generate: true}", `--x`, `tls.yaml:6:8: target.tls is given but the url "http://127.0.0.1:{port}" does not start with https://`},
		{"both", "https://127.0.0.1:{port}", "  tls: {generate: true, ca: garbage.pem}", `--x`, "tls has both ca and generate"},
		{"neither", "https://127.0.0.1:{port}", "  tls: {server_name: x}", `--x`, "tls names neither ca nor generate"},
		{"not a certificate", "https://127.0.0.1:{port}", "  tls: {ca: garbage.pem}", `--x`, "tls.yaml:6:13: tls.ca " + filepath.Join(dir, "garbage.pem") + " holds no PEM certificate"},
		{"a missing CA file", "https://127.0.0.1:{port}", "  tls: {ca: none.pem}", `--x`, "tls.yaml:6:13: cannot read tls.ca"},
		{"a placeholder without generate", "https://127.0.0.1:{port}", "", `"--cert={tls:cert}"`, "the command uses a {tls:...} placeholder but the target has no generated certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.NewReplacer("URL", tt.url, "TLS", tt.tls, "ARGS", tt.args).Replace(tlsScenario)
			name := filepath.Join(dir, "tls.yaml")
			if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := LoadFile(name, Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				got := sc.Target.WithTLSFiles(TLSFiles{Cert: "/c.pem", Key: "/k.pem"}).Command.Argv
				if got[3] != "--cert=/c.pem" || got[4] != "--key=/k.pem" {
					t.Errorf("placeholders filled as %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

const grpcTLSScenario = `name: tls
target:
  command:
    argv: [./svc, --grpc, "127.0.0.1:{port:grpc}", "--cert={tls:cert}"]
URL  grpc:
    address: "127.0.0.1:{port:grpc}"
GRPCTLS
TLS
load:
  rate: 10/s
  requests: [{grpc: {method: fixture.Items/GetItem, message: {id: 1}}}]
phases:
  - {name: p, duration: 1s}
`

// TestGRPCTargetTLS: target.grpc.tls speaks TLS to the gRPC address with
// what target.tls trusts, also beside a plain http:// url; without
// target.tls, or target.tls with neither an https:// url nor
// target.grpc.tls, it is refused at its place with a hint.
func TestGRPCTargetTLS(t *testing.T) {
	tests := []struct {
		name, url, grpcTLS, tls string
		want                    string // "" loads
	}{
		{"gRPC only", "", "    tls: true", "  tls: {generate: true}", ""},
		{"beside a plain url", "  url: http://127.0.0.1:{port}\n", "    tls: true", "  tls: {generate: true}", ""},
		{"no target.tls", "", "    tls: true", "", "tls.yaml:7:10: target.grpc.tls is true but the target has no tls (add tls: {generate: true}"},
		{"target.tls for nothing", "", "    tls: false", "  tls: {generate: true}", "tls.yaml:8:8: target.tls is given but the gRPC address does not speak TLS (target.grpc.tls is not true) (add tls: true to target.grpc"},
		{"beside a plain url, grpc plain", "  url: http://127.0.0.1:{port}\n", "", "  tls: {generate: true}", "or add tls: true to target.grpc for a gRPC address on TLS"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.NewReplacer("URL", tt.url, "GRPCTLS", tt.grpcTLS, "TLS", tt.tls).Replace(grpcTLSScenario)
			name := filepath.Join(dir, "tls.yaml")
			if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := LoadFile(name, Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !sc.Target.GRPC.TLS || sc.Target.TLS == nil || !sc.Target.TLS.Generate {
					t.Errorf("target.grpc %+v, target.tls %+v", sc.Target.GRPC, sc.Target.TLS)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
