package tandemcli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// caFile is the profile's own certificate authority for its mail server,
// kept from connect --ca-file so that every command that dials trusts it
// (docs/decisions/cli-tls.md).
const caFile = "ca.pem"

// maxCAFile bounds a CA file.
const maxCAFile = 1 << 20

// trust is a set of CA certificates: the PEM text and the pool made of it
// with the system's roots.
type trust struct {
	pem  []byte
	pool *x509.CertPool
}

// readTrust reads a CA file a person named (or the profile's copy).
func readTrust(path string) (*trust, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, failf("invalid", "cannot read the CA file %s: %v", path, pathErr(err))
	}
	if fi.Size() > maxCAFile {
		return nil, failf("invalid", "%s is not a CA certificate (it is over 1 MiB): give the server's CA certificate in PEM form", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, failf("invalid", "cannot read the CA file %s: %v", path, pathErr(err))
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, failf("invalid", "%s holds no certificate Ferry can read: give the server's CA certificate in PEM form (-----BEGIN CERTIFICATE-----)", path)
	}
	return &trust{pem: b, pool: pool}, nil
}

// profileTrust is the profile's stored CA, or nil when it has none.
func profileTrust(dir string) (*trust, error) {
	p := filepath.Join(dir, caFile)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	t, err := readTrust(p)
	if err != nil {
		return nil, failf("storage", "the profile's CA file %s is damaged: connect again with --ca-file FILE", p)
	}
	return t, nil
}

// roots is t's pool, nil (the system's) for no trust.
func (t *trust) roots() *x509.CertPool {
	if t == nil {
		return nil
	}
	return t.pool
}

// connectTrust is what a connect command trusts: --ca-file when given,
// else the profile's stored CA.
func (a *app) connectTrust(file string) (*trust, error) {
	if file != "" {
		return readTrust(file)
	}
	dir, _, err := a.profileDir()
	if err != nil {
		return nil, err
	}
	return profileTrust(dir)
}

// keepTrust stores the CA file given to connect in the profile.
func keepTrust(dir string, t *trust) error {
	if t == nil {
		return nil
	}
	return writeFileAtomic(filepath.Join(dir, caFile), t.pem)
}

// writeFileAtomic writes b to path through a temporary file.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return failf("storage", "cannot write %s: %v", path, pathErr(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return failf("storage", "cannot write %s: %v", path, pathErr(err))
	}
	return nil
}

// certErr says what is wrong with the certificate of the server at addr
// ("" for "the mail server"), or nil when err is not about a certificate:
// an issuer this computer doesn't know, another name, or out of its
// validity (docs/decisions/cli-tls.md).
func certErr(err error, addr string) *Error {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var cert *tls.CertificateVerificationError
	var sys x509.SystemRootsError
	what := "the certificate of " + addr
	if addr == "" {
		what = "the mail server's certificate"
	}
	switch {
	case errors.As(err, &unknown), errors.As(err, &sys):
		return &Error{Exit: ExitError, Kind: "tls", Err: err, Msg: what + " is signed by an authority this computer does not know (unknown issuer): if it is your own server's, connect again with --ca-file FILE (its CA certificate)"}
	case errors.As(err, &host):
		return &Error{Exit: ExitError, Kind: "tls", Err: err, Msg: fmt.Sprintf("%s is for another name (%s), not %s (wrong name): check the address", what, certNames(host.Certificate), host.Host)}
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return &Error{Exit: ExitError, Kind: "tls", Err: err, Msg: what + " has expired or is not valid yet (expired): check this computer's clock, or ask the server's admin to renew it"}
	case errors.As(err, &invalid), errors.As(err, &cert):
		return &Error{Exit: ExitError, Kind: "tls", Err: err, Msg: what + " is not valid for this use: ask the server's admin"}
	}
	return nil
}

// certNames lists the names a certificate is for.
func certNames(c *x509.Certificate) string {
	if c == nil {
		return "?"
	}
	names := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		names = append(names, c.Subject.CommonName)
	}
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return strings.Join(names, ", ")
}

const caFileHelp = "trust the server's certificate authority in this PEM file (a server with a certificate of its own); kept in the profile for every later command"

// useTrust sets what this connect trusts: --ca-file, else the profile's CA.
func (a *app) useTrust(file string) error {
	t, err := a.connectTrust(file)
	a.trust = t
	return err
}
