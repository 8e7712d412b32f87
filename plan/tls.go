package plan

import (
	"crypto/x509"
	"strings"
)

// TLS says how chaoskit trusts a target that speaks TLS (an https://
// url). chaoskit never skips the check of the target's certificate: it
// trusts the CA file a scenario names, or the CA it made itself for a
// target it starts, or else the system's roots.
type TLS struct {
	// CA is a PEM file of the certificates the target's is signed by,
	// relative to the scenario file. chaoskit trusts these and no others.
	CA string `yaml:"ca"`
	// Generate makes chaoskit create, for each run, a CA and a certificate
	// signed by it for 127.0.0.1, ::1 and localhost, which it trusts. The
	// target, which chaoskit must start (target.command), finds the files
	// of the certificate, its key and the CA in CHAOSKIT_TLS_CERT,
	// CHAOSKIT_TLS_KEY and CHAOSKIT_TLS_CA, and as {tls:cert}, {tls:key}
	// and {tls:ca} in its command line and env values.
	Generate bool `yaml:"generate"`
	// ServerName is the name the certificate is checked against; default
	// the url's host.
	ServerName string `yaml:"server_name"`

	// CAPEM is the content of CA, read when the scenario loads.
	CAPEM []byte `yaml:"-"`
}

// Environment variables a target given a generated certificate reads.
const (
	TLSCertEnv = "CHAOSKIT_TLS_CERT"
	TLSKeyEnv  = "CHAOSKIT_TLS_KEY"
	TLSCAEnv   = "CHAOSKIT_TLS_CA"
)

// maxCAFile bounds a CA file: a bundle of every public root is about
// 200 KiB.
const maxCAFile = 1 << 20

// TLSFiles are the files of a generated certificate, for the
// placeholders {tls:cert}, {tls:key} and {tls:ca}.
type TLSFiles struct{ Cert, Key, CA string }

// WithTLSFiles returns a copy of the target with the {tls:...}
// placeholders of its command line and env values filled.
func (t Target) WithTLSFiles(f TLSFiles) Target {
	if t.Command == nil {
		return t
	}
	r := strings.NewReplacer("{tls:cert}", f.Cert, "{tls:key}", f.Key, "{tls:ca}", f.CA)
	c := *t.Command
	c.Argv = fillAllWith(c.Argv, r.Replace)
	c.Env = fillEnvWith(c.Env, r.Replace)
	t.Command = &c
	return t
}

// validateTLS checks target.tls against the url's scheme (an http://
// url is fine when the TLS is the gRPC address's, target.grpc.tls) and
// reads the CA file.
func (v *validator) validateTLS() {
	t := &v.sc.Target
	https := strings.HasPrefix(strings.ToLower(t.URL), "https://")
	refs := false
	if t.Command != nil {
		for _, s := range append(append([]string{}, t.Command.Argv...), envValues(t.Command.Env)...) {
			refs = refs || strings.Contains(s, "{tls:")
		}
	}
	grpcTLS := t.GRPC != nil && t.GRPC.TLS
	c := t.TLS
	if c == nil {
		if refs {
			v.errorf("$.target.command", "add tls: {generate: true} to the target", "the command uses a {tls:...} placeholder but the target has no generated certificate")
		}
		if grpcTLS {
			v.errorf("$.target.grpc.tls", "add tls: {generate: true} (a certificate chaoskit makes for a service it starts) or tls: {ca: certs/ca.pem} to the target: it says what chaoskit trusts", "target.grpc.tls is true but the target has no tls")
		}
		return
	}
	switch {
	case https || grpcTLS:
	case t.URL == "" && t.GRPC != nil:
		v.errorf("$.target.tls", "add tls: true to target.grpc, or remove tls", "target.tls is given but the gRPC address does not speak TLS (target.grpc.tls is not true)")
	case t.GRPC != nil:
		v.errorf("$.target.tls", "write url: https://127.0.0.1:{port}, or add tls: true to target.grpc for a gRPC address on TLS, or remove tls", "target.tls is given but the url %q does not start with https://", t.URL)
	default:
		v.errorf("$.target.tls", "write url: https://127.0.0.1:{port}, or remove tls", "target.tls is given but the url %q does not start with https://", t.URL)
	}
	switch {
	case c.Generate && c.CA != "":
		v.errorf("$.target.tls", "keep ca (a certificate of your own) or generate (one chaoskit makes)", "tls has both ca and generate")
	case c.Generate && t.Command == nil:
		v.errorf("$.target.tls.generate", "give the target a command: chaoskit hands the certificate to a service it starts; for a running service, name its CA file with tls.ca", "tls.generate needs a target chaoskit starts")
	case !c.Generate && c.CA == "":
		v.errorf("$.target.tls", "write ca: certs/ca.pem (the CA that signs the service's certificate) or generate: true", "tls names neither ca nor generate")
	case !c.Generate && refs:
		v.errorf("$.target.command", "use {tls:...} with tls.generate only", "the command uses a {tls:...} placeholder but chaoskit generates no certificate")
	}
	if c.CA == "" || v.opts.SkipBodyFiles {
		return
	}
	name := v.path(c.CA)
	data, err := readBoundedScenario(name, maxCAFile)
	if err != nil {
		v.errorf("$.target.tls.ca", "give a PEM file of CA certificates, relative to the scenario", "cannot read tls.ca: %v", err)
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		v.errorf("$.target.tls.ca", "give a PEM file holding -----BEGIN CERTIFICATE----- blocks", "tls.ca %s holds no PEM certificate", name)
		return
	}
	c.CA, c.CAPEM = name, data
}

func envValues(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, s := range env {
		out = append(out, s)
	}
	return out
}

// TempDirRef is the placeholder of the run's temporary directory in the
// target's command line and env values: the directory its TMPDIR names,
// which setup programs may write files into for the target to read (a
// policy file, say), removed when the run ends.
const TempDirRef = "{tmpdir}"

// WithTempDir returns a copy of the target with {tmpdir} in its command
// line and env values filled with dir.
func (t Target) WithTempDir(dir string) Target {
	if t.Command == nil {
		return t
	}
	fill := func(s string) string { return strings.ReplaceAll(s, TempDirRef, dir) }
	c := *t.Command
	c.Argv = fillAllWith(c.Argv, fill)
	c.Env = fillEnvWith(c.Env, fill)
	t.Command = &c
	return t
}
