package tandemcli_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// TestTrustCADovecot: Dovecot's implicit-TLS port has a certificate of
// its own CA. Without it, connect says "unknown issuer" and names
// --ca-file; with --ca-file the CA is kept in the profile, and later
// commands that dial (sync, device add and join) trust it without being
// told again. A profile whose CA file went missing says the same as
// connect did. A certificate for another name and an expired one are told
// apart (a TLS server of the test's own, as Dovecot's certificate is good).
func TestTrustCADovecot(t *testing.T) {
	_, user, pass := dovecotAccount(t)
	addr, ca := realtest.Getenv("FERRY_DOVECOT_TLS_ADDR"), realtest.Getenv("FERRY_DOVECOT_CA")
	if addr == "" || ca == "" {
		realtest.Unavailable(t, "FERRY_DOVECOT_TLS_ADDR / FERRY_DOVECOT_CA (run scripts/setup.d/10-dovecot.sh)")
	}
	a := initialized(t)
	a.env = []string{"FERRY_PASSWORD=" + pass, "SSL_CERT_FILE=/dev/null"}
	before := a.stored()
	wantErr(t, a.run("connect", "imap", addr, "--user", user), 1, "the certificate of "+addr+" is signed by an authority this computer does not know (unknown issuer): if it is your own server's, connect again with --ca-file FILE")
	wantErr(t, a.run("connect", "imap", addr, "--user", user, "--ca-file", writeFile(t, "x.pem", "not a certificate")), 1, "holds no certificate Ferry can read")
	if a.stored() != before {
		t.Fatal("a refused connect changed the profile")
	}
	if out := a.ok("connect", "imap", addr, "--user", user, "--ca-file", ca); !strings.Contains(out, "Synced:") {
		t.Fatalf("connect with --ca-file: %s", out)
	}
	a.env = []string{"SSL_CERT_FILE=/dev/null"} // only the profile's CA
	a.ok("sync")

	// Another device of Aimee's pairs through the same server.
	b := newDevice(t, "phone")
	b.env = a.env
	add := a.start("device", "add", "--yes")
	payload := add.line(`^(\{"t":"pair".*\})$`)[1]
	join := b.start("device", "join", payload, "--name", "Aimee", "--ca-file", ca)
	code := join.line(`^Code (\d{3} \d{3})$`)[1]
	add.prompt(`Add 'Aimee'\? Code ` + code)
	add.stdin.Write([]byte("y\n"))
	add.wait()
	join.line(`^Synced:`)
	join.wait()
	if out := b.ok("show", "Groceries"); !strings.Contains(out, "Milk") {
		t.Errorf("the paired device does not have the list:\n%s", out)
	}

	// The profile's CA gone: sync says what connect said.
	if err := os.Remove(filepath.Join(a.dir, "ca.pem")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, a.run("sync"), 1, "the mail server's certificate is signed by an authority this computer does not know (unknown issuer)")

	caPEM, wrongName := tlsServer(t, "example.invalid", time.Now().Add(time.Hour))
	_, expired := tlsServer(t, "127.0.0.1", time.Now().Add(-time.Hour))
	caPath := writeFile(t, "ca.pem", caPEM)
	c := initialized(t)
	c.env = []string{"FERRY_PASSWORD=x"}
	wantErr(t, c.run("connect", "imap", wrongName, "--user", "x", "--ca-file", caPath), 1, "the certificate of "+wrongName+" is for another name (example.invalid), not 127.0.0.1 (wrong name): check the address")
	wantErr(t, c.run("connect", "imap", expired, "--user", "x", "--ca-file", caPath), 1, "the certificate of "+expired+" has expired or is not valid yet (expired)")
}

// tlsServer is an implicit-TLS IMAP greeter whose certificate, for name
// and valid until notAfter, a CA of its own signed; it returns the CA's
// PEM and the server's address.
func tlsServer(t *testing.T, name string, notAfter time.Time) (caPEM, addr string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now().Add(-2 * time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if ip := net.ParseIP(name); ip != nil {
		leaf.IPAddresses = []net.IP{ip}
	} else {
		leaf.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	serveConns(t, l, func(c net.Conn) { fmt.Fprint(c, "* OK hi\r\n") })
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})), l.Addr().String()
}
