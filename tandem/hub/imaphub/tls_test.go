package imaphub

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
)

// dovecotTLS returns the Dovecot config of user for STARTTLS (on the
// QRESYNC instance's port) and for implicit TLS (FERRY_DOVECOT_TLS_ADDR),
// trusting the self-signed certificate 10-dovecot.sh made.
func dovecotTLS(t *testing.T, user string) (starttls, implicit Config) {
	base := dovecot(t, "FERRY_DOVECOT_ADDR", user)
	addr, caFile := realtest.Getenv("FERRY_DOVECOT_TLS_ADDR"), realtest.Getenv("FERRY_DOVECOT_CA")
	if addr == "" || caFile == "" {
		realtest.Unavailable(t, "Dovecot TLS: FERRY_DOVECOT_TLS_ADDR / FERRY_DOVECOT_CA not set (run scripts/setup.d/10-dovecot.sh)")
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		realtest.Unavailable(t, "Dovecot TLS certificate: "+err.Error())
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", caFile)
	}
	starttls, implicit = base, base
	starttls.Security, starttls.TLS = StartTLS, &tls.Config{RootCAs: roots}
	implicit.Addr, implicit.Security, implicit.TLS = addr, ImplicitTLS, &tls.Config{RootCAs: roots}
	return starttls, implicit
}

// otherCA is a certificate pool with a CA that signed nothing Dovecot has.
func otherCA(t *testing.T) *x509.CertPool {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestTLSDovecot (issue 15, point 12): STARTTLS on the IMAP port and
// implicit TLS on its own port both log in and sync against Dovecot with
// its self-signed certificate trusted; a certificate that does not verify
// (the system roots, another CA, another server name) is refused in both
// modes with an error that is not hub.ErrUnavailable; TLSInsecure (test
// servers only) skips the check.
func TestTLSDovecot(t *testing.T) {
	st, im := dovecotTLS(t, "victor")
	for name, cfg := range map[string]Config{"STARTTLS": st, "implicit TLS": im} {
		t.Run(name, func(t *testing.T) {
			s := openT(t, cfg)
			if _, ok := s.c.nc.(*tls.Conn); !ok {
				t.Fatalf("the connection is %T, not TLS", s.c.nc)
			}
			if err := s.EnsureFolder(ctx5(t)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Changes(ctx5(t), nil); err != nil {
				t.Fatal(err)
			}
			s.Close()
			wrong := map[string]*tls.Config{
				"system roots":      nil,
				"another CA":        {RootCAs: otherCA(t)},
				"another host name": {RootCAs: cfg.TLS.RootCAs, ServerName: "imap.example.org"},
			}
			for why, tc := range wrong {
				bad := cfg
				bad.TLS = tc
				_, err := Open(ctx5(t), bad)
				if err == nil || errors.Is(err, hub.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
					t.Errorf("%s: Open = %v, want a certificate error (not hub.ErrUnavailable)", why, err)
				}
			}
			insecure := cfg
			insecure.TLS, insecure.TLSInsecure = nil, true
			openT(t, insecure).Close()
		})
	}
}

// TestTLSRefusals: STARTTLS asked of a server that does not offer it (the
// plain Dovecot instance) is refused clearly, and plaintext to a host
// that is not a loopback address is refused before connecting.
func TestTLSRefusals(t *testing.T) {
	cfg := dovecot(t, "FERRY_DOVECOT_PLAIN_ADDR", "victor")
	cfg.Security = StartTLS
	if _, err := Open(ctx5(t), cfg); !errors.Is(err, hub.ErrProtocol) || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("STARTTLS on a server without it: %v", err)
	}
	for _, addr := range []string{"imap.example.org:143", "192.0.2.1:143"} {
		_, err := Open(ctx5(t), Config{Addr: addr, User: "u", Password: "p"})
		if !errors.Is(err, ErrPlaintext) {
			t.Errorf("plaintext to %s: %v, want ErrPlaintext", addr, err)
		}
	}
}
