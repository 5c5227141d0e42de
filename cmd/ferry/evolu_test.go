package main

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/evolu/relay"
)

func TestEvoluPutSyncRows(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := relay.New(ctx, relay.Config{DBPath: filepath.Join(dir, "relay.db")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
		srv.Close()
	}()
	url := "ws://" + ln.Addr().String()
	secret := strings.Repeat("ab", 32)
	a, b := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	if _, err := run(t, "evolu", "put", "--secret", secret, "--db", a, "--table", "todo", "--id", "AAAAAAAAAAAAAAAAAAAAAA", "title=Buy milk", "n:=42", "note:=null"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "evolu", "sync", "--relay", url, "--secret", secret, "--db", a, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Sent, Received int }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Sent != 1 {
		t.Fatalf("sync a: %q %v", out, err)
	}
	if out, err = run(t, "evolu", "sync", "--relay", url, "--secret", secret, "--db", b); err != nil || !strings.Contains(out, "received 1") {
		t.Fatalf("sync b: %q %v", out, err)
	}
	out, err = run(t, "evolu", "rows", "--secret", secret, "--db", b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `todo AAAAAAAAAAAAAAAAAAAAAA n=42 note=null title="Buy milk"`; strings.TrimSpace(out) != want {
		t.Fatalf("rows %q, want %q", out, want)
	}
	if _, err := run(t, "evolu", "put", "--secret", "nothex", "--db", a, "--table", "t", "x=1"); err == nil {
		t.Fatal("bad secret accepted")
	}
}

func TestRelayCmdFlags(t *testing.T) {
	cmd := newRelayCmd()
	if f := cmd.Flags().Lookup("addr"); f == nil || f.DefValue != "127.0.0.1:4000" {
		t.Fatal("--addr default")
	}
	if f := cmd.Flags().Lookup("db"); f == nil || f.DefValue != "relay.db" {
		t.Fatal("--db default")
	}
}
