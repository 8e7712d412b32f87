package runner

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/chaoskit/chaoskit/plan"
)

// targetTLS is what a run needs to speak TLS to its target: the client
// side's configuration (nil for a plain http:// target) and, for a
// certificate chaoskit made, the files the target is given.
type targetTLS struct {
	config *tls.Config
	files  plan.TLSFiles
	// made says the files were generated, in the run's scratch
	// directory.
	made bool
}

// prepareTLS sets the run's TLS up from target.tls: the CA file the
// scenario names, or a CA and a certificate made for this run, or the
// system's roots for an https:// url without tls. The check of the
// target's certificate is never skipped.
func (r *run) prepareTLS() error {
	c := r.sc.Target.TLS
	if c == nil {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	switch {
	case c.Generate:
		dir := filepath.Join(r.scratch, "tls")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return infra("cannot make a directory for the target's certificate", "", err)
		}
		r.tls.made = true
		files, pool, err := generateCertificate(dir)
		if err != nil {
			return infra("cannot make a certificate for the target", "", err)
		}
		r.tls.files, cfg.RootCAs = files, pool
	default:
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(c.CAPEM)
		cfg.RootCAs = pool
	}
	r.tls.config = cfg
	return nil
}

// tlsEnv is what a started target is told of the certificate made for
// it.
func (r *run) tlsEnv() []string {
	if !r.tls.made {
		return nil
	}
	f := r.tls.files
	return []string{plan.TLSCertEnv + "=" + f.Cert, plan.TLSKeyEnv + "=" + f.Key, plan.TLSCAEnv + "=" + f.CA}
}

// generateCertificate writes to dir a CA (ca.pem) and a certificate it
// signs (cert.pem, key.pem) for 127.0.0.1, ::1 and localhost, valid for
// a day, ECDSA P-256; it returns the files and a pool holding the CA
// alone. The key is readable by its owner only.
func generateCertificate(dir string) (plan.TLSFiles, *x509.CertPool, error) {
	files := plan.TLSFiles{Cert: filepath.Join(dir, "cert.pem"), Key: filepath.Join(dir, "key.pem"), CA: filepath.Join(dir, "ca.pem")}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "chaoskit run CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return files, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return files, nil, err
	}
	for _, f := range []struct {
		name, kind string
		der        []byte
		mode       os.FileMode
	}{
		{files.CA, "CERTIFICATE", caDER, 0o644},
		{files.Cert, "CERTIFICATE", leafDER, 0o644},
		{files.Key, "PRIVATE KEY", keyDER, 0o600},
	} {
		if err := os.WriteFile(f.name, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), f.mode); err != nil {
			return files, nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return files, pool, nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
