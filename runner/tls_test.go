package runner

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
)

// TestGeneratedCertificate: the certificate made for a target is checked
// against the CA made with it for each loopback name a url may use, no
// other name; its key is readable by its owner alone.
func TestGeneratedCertificate(t *testing.T) {
	dir := t.TempDir()
	files, pool, err := generateCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := pair.Leaf
	for _, name := range []string{"127.0.0.1", "::1", "localhost"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := leaf.VerifyHostname("example.com"); err == nil {
		t.Error("the certificate is valid for example.com")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
		t.Errorf("not signed by the CA made with it: %v", err)
	}
	if st, err := os.Stat(files.Key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	if _, err := os.Stat(files.CA); err != nil {
		t.Errorf("no CA file: %v", err)
	}
}
