package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chaoskit/chaoskit/runner"
)

// buildFixture builds a fixture service of testdata into dir.
func buildFixture(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, "./testdata/"+name)
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/%s: %v\n%s", name, err, out)
	}
	return bin
}

const httpsScenario = `name: https-load
target:
  command:
    argv: [%s, --listen, "127.0.0.1:{port}"%s]
  url: https://127.0.0.1:{port}
  tls: %s
load:
  rate: %s
  timeout: 1s
  requests:
    - path: /items/{1..100}
phases:
  - name: steady
    duration: %s
contracts:
  - name: every item is served over TLS
    phase: steady
    expect:
      - status == 200 for >= 99%%
      - json("tls") == true for >= 99%%
`

// TestHTTPSTargetWithGeneratedCertificateAt1000PerSecond loads
// testdata/tlsservice over HTTPS, with a certificate chaoskit made for
// the run and a check of it against that CA alone, at 1,000 requests/s for
// 10 s; run.json reports the rate achieved. The certificate's files are
// gone after the run and nothing is left running.
func TestHTTPSTargetWithGeneratedCertificateAt1000PerSecond(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	svc := buildFixture(t, dir, "tlsservice")
	scenario := writeFile(t, dir, "https.yaml", sprintf(httpsScenario, svc, "", "{generate: true}", "1000/s", "10s"))
	out := filepath.Join(dir, "out")
	res := runBin(t, bin, "run", scenario, "--report-dir", out)
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	runDir := filepath.Join(out, "https-load")
	assertNoOrphans(t, readTimeline(t, runDir))
	sum := readRunSummary(t, runDir)
	rate := sum.Phases[0].Rate
	t.Logf("achieved %.1f requests/s over HTTPS (%d requests in %v)", rate, sum.Phases[0].Requests, sum.Phases[0].Actual)
	if rate < 950 || rate > 1050 {
		t.Errorf("achieved rate %.1f/s, want 1000/s within 5%%", rate)
	}
	stderr, err := os.ReadFile(filepath.Join(runDir, runner.TargetStderr))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`certificate (\S+)`).FindSubmatch(stderr)
	if m == nil || !strings.HasSuffix(string(m[1]), "cert.pem") {
		t.Fatalf("the service was given no certificate file: %s", stderr)
	}
	if _, err := os.Stat(filepath.Dir(string(m[1]))); !os.IsNotExist(err) {
		t.Errorf("the generated certificate's directory %s outlived the run (%v)", filepath.Dir(string(m[1])), err)
	}
}

// TestHTTPSTargetWithNamedCA: a service with a certificate of its own is
// trusted through the CA file the scenario names (tls.ca); named with
// another CA, the run stops with exit 3 before any load, saying the
// certificate is not trusted: the check is never skipped.
func TestHTTPSTargetWithNamedCA(t *testing.T) {
	bin := chaoskitBin(t)
	dir := t.TempDir()
	svc := buildFixture(t, dir, "tlsservice")
	writeTestCA(t, dir, "ca.pem", "cert.pem", "key.pem")
	other := t.TempDir()
	writeTestCA(t, other, "ca.pem", "cert.pem", "key.pem")
	writeFile(t, dir, "other-ca.pem", string(mustRead(t, filepath.Join(other, "ca.pem"))))
	flags := `, --cert, ` + filepath.Join(dir, "cert.pem") + `, --key, ` + filepath.Join(dir, "key.pem")

	scenario := writeFile(t, dir, "https.yaml", sprintf(httpsScenario, svc, flags, "{ca: ca.pem}", "100/s", "1s"))
	res := runBin(t, bin, "run", scenario, "--report-dir", filepath.Join(dir, "out"))
	if res.code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", res.code, res.stdout, res.stderr)
	}

	scenario = writeFile(t, dir, "https-other.yaml", sprintf(httpsScenario, svc, flags, "{ca: other-ca.pem}", "100/s", "1s"))
	out := filepath.Join(dir, "out-other")
	res = runBin(t, bin, "run", scenario, "--report-dir", out)
	if res.code != 3 || !strings.Contains(res.stderr, "certificate signed by unknown authority") {
		t.Fatalf("another CA: exit %d, want 3 and the certificate refused\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	assertNoOrphans(t, readTimeline(t, filepath.Join(out, "https-load")))
}

func sprintf(format string, args ...any) string {
	return strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n"
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readRunSummary(t *testing.T, runDir string) runner.Summary {
	t.Helper()
	var s runner.Summary
	if err := json.Unmarshal(mustRead(t, filepath.Join(runDir, runner.SummaryFile)), &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Phases) == 0 {
		t.Fatalf("run.json has no phases")
	}
	return s
}

// writeTestCA writes a CA and a certificate it signs for 127.0.0.1 into
// dir.
func writeTestCA(t *testing.T, dir, caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(key)
	writeFile(t, dir, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	writeFile(t, dir, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, dir, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})))
}
