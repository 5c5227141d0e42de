package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/evolu/client"
	"github.com/ferry-sync/ferry/evolu/relay"
)

// lockedBuffer collects a running command's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startRelayCmd runs "ferry relay args..." until the test ends and returns
// its output so far once it printed want (a regexp whose first group is
// returned).
func startRelayCmd(t *testing.T, args ...string) (*lockedBuffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := newRootCmd()
	out := &lockedBuffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append([]string{"relay"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ferry relay: %v", err)
		}
	}
	return out, stop
}

func waitFor(t *testing.T, out *lockedBuffer, re string) string {
	t.Helper()
	r := regexp.MustCompile(re)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := r.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q in output:\n%s", re, out.String())
	return ""
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile
}

// TestRelayCmdOperator: ferry relay with TLS, an admin address, JSON logs,
// an owner allow-list and a quota file; a second ferry relay on the same
// file is refused; owners and delete-owner.
func TestRelayCmdOperator(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "relay.db")
	cert, key := selfSigned(t, dir)
	allowed, other := client.OwnerFromSecret(client.Secret{1}), client.OwnerFromSecret(client.Secret{2})
	os.WriteFile(filepath.Join(dir, "allow"), []byte("# owners\n"+allowed.ID().String()+"\n"+other.ID().String()+"\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "quota"), []byte("* 1k\n"+other.ID().String()+" 100\n"), 0o600)
	out, stop := startRelayCmd(t, "--db", db, "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--log-format", "json",
		"--tls-cert", cert, "--tls-key", key, "--allow-owners", filepath.Join(dir, "allow"), "--quota-file", filepath.Join(dir, "quota"))
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	addr := waitFor(t, out, `listening on wss://(\S+)`)
	admin := waitFor(t, out, `admin on (http://\S+) `)

	if _, err := run(t, "relay", "--db", db, "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "in use by another relay process") {
		t.Fatalf("second ferry relay on one file: %v", err)
	}
	resp, err := http.Get(admin + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tlsClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := "wss://" + addr
	put := func(o client.Owner, value string) error {
		st, err := client.OpenStore(ctx, filepath.Join(dir, o.ID().String()+".db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.Put(ctx, o, client.DbChange{Table: "t", ID: client.ID{1}, Values: []client.Column{{Name: "v", Value: value}}}); err != nil {
			t.Fatal(err)
		}
		_, err = client.Sync(ctx, url, o, st, client.SyncOptions{HTTPClient: tlsClient})
		return err
	}
	if err := put(client.OwnerFromSecret(client.Secret{3}), "x"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("an owner not in --allow-owners: %v", err)
	}
	if err := put(allowed, "small"); err != nil { // under the 1k default
		t.Fatalf("allowed owner: %v", err)
	}
	var re *client.RelayError
	if err := put(other, strings.Repeat("x", 200)); !errors.As(err, &re) || re.Code != client.RelayQuota { // over its 100-byte override
		t.Fatalf("owner with a 100-byte quota: %v", err)
	}
	waitFor(t, out, `("msg":"evolu relay: quota refused a write")`)
	waitFor(t, out, `("msg":"evolu relay: connected","remote":"127.0.0.1")`)

	listed, err := run(t, "relay", "owners", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var owners []struct {
		OwnerID     string
		Changes     int64
		StoredBytes int64
	}
	if err := json.Unmarshal([]byte(listed), &owners); err != nil || len(owners) != 2 {
		t.Fatalf("relay owners while it runs: %q %v", listed, err)
	}
	for _, o := range owners {
		if o.OwnerID == allowed.ID().String() && (o.Changes != 1 || o.StoredBytes < 50 || o.StoredBytes > 1000) || o.OwnerID == other.ID().String() && o.Changes != 0 {
			t.Fatalf("relay owners: %q", listed)
		}
	}
	if _, err := run(t, "relay", "delete-owner", "--db", db, allowed.ID().String()); err == nil || !strings.Contains(err.Error(), "stop it") {
		t.Fatalf("delete-owner while the relay runs: %v", err)
	}
	stop()
	stopped = true
	if got, err := run(t, "relay", "delete-owner", "--db", db, allowed.ID().String()); err != nil || !strings.Contains(got, "deleted") {
		t.Fatalf("delete-owner: %q %v", got, err)
	}
	if listed, _ := run(t, "relay", "owners", "--db", db); strings.Contains(listed, allowed.ID().String()) {
		t.Fatalf("owner still listed after delete-owner: %q", listed)
	}
}

// TestEvoluClientCmdErrors: issue 16's client defects, each refused with
// one line.
func TestEvoluClientCmdErrors(t *testing.T) {
	dir := t.TempDir()
	secret := strings.Repeat("cd", 32)
	typo := filepath.Join(dir, "typo.db")
	if _, err := run(t, "evolu", "rows", "--secret", secret, "--db", typo); err == nil || !strings.Contains(err.Error(), "no client database") {
		t.Fatalf("rows on a missing database: %v", err)
	}
	if _, err := os.Stat(typo); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("rows created %s", typo)
	}
	cdb := filepath.Join(dir, "client.db")
	if _, err := run(t, "evolu", "put", "--secret", secret, "--db", cdb, "--table", "todo", "--delete"); err == nil || !strings.Contains(err.Error(), "--id") {
		t.Fatalf("put --delete without --id: %v", err)
	}
	if _, err := run(t, "evolu", "put", "--secret", secret, "--db", cdb, "--table", "todo", "title=x"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "evolu", "rows", "--secret", strings.Repeat("ce", 32), "--db", cdb); err == nil || !strings.Contains(err.Error(), "has no rows in") {
		t.Fatalf("rows with a wrong secret: %v", err)
	}
	// The relay's database and the client's are told apart.
	rdb := filepath.Join(dir, "relay.db")
	srv, err := relay.New(context.Background(), relay.Config{DBPath: rdb})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := run(t, "evolu", "rows", "--secret", secret, "--db", rdb); err == nil || !strings.Contains(err.Error(), "is an Evolu relay database, not an Evolu client database") {
		t.Fatalf("client on a relay database: %v", err)
	}
	if _, err := run(t, "relay", "--db", cdb, "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "is an Evolu client database, not an Evolu relay database") {
		t.Fatalf("relay on a client database: %v", err)
	}
	if _, err := run(t, "evolu", "put", "--secret", "nothex", "--db", cdb, "--table", "t", "x=1"); err == nil || strings.Contains(err.Error(), "evolu:") || !strings.Contains(err.Error(), "mnemonic") {
		t.Fatalf("bad secret: %v", err)
	}
}

// TestEvoluMnemonic: new-secret prints the mnemonic (and JSON), and the
// mnemonic works as --secret for the same owner as the hex form.
func TestEvoluMnemonic(t *testing.T) {
	out, err := run(t, "evolu", "new-secret", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ Secret, Mnemonic, OwnerID string }
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(strings.Fields(s.Mnemonic)) != 24 || len(s.Secret) != 64 {
		t.Fatalf("new-secret --json: %q %v", out, err)
	}
	text, _ := run(t, "evolu", "new-secret")
	if !strings.Contains(text, "\nmnemonic ") {
		t.Fatalf("new-secret: %q", text)
	}
	db := filepath.Join(t.TempDir(), "c.db")
	if _, err := run(t, "evolu", "put", "--secret", s.Mnemonic, "--db", db, "--table", "todo", "--id", "AAAAAAAAAAAAAAAAAAAAAA", "title=m"); err != nil {
		t.Fatal(err)
	}
	rows, err := run(t, "evolu", "rows", "--secret", s.Secret, "--db", db)
	if err != nil || !strings.Contains(rows, `title="m"`) {
		t.Fatalf("rows by hex after put by mnemonic: %q %v", rows, err)
	}
}

// TestEvoluSyncTimeout: sync against a relay that never answers ends with
// a one-line error after --timeout.
func TestEvoluSyncTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		io.Copy(io.Discard, websocket.NetConn(r.Context(), ws, websocket.MessageBinary))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	_, err = run(t, "evolu", "sync", "--secret", strings.Repeat("ab", 32), "--db", filepath.Join(t.TempDir(), "c.db"),
		"--relay", "ws://"+ln.Addr().String(), "--timeout", "300ms")
	if err == nil || !strings.Contains(err.Error(), "sent no reply within 300ms") {
		t.Fatalf("sync against a silent relay: %v", err)
	}
}
