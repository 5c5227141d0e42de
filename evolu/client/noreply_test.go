package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ferry-sync/ferry/internal/realtest"
)

// TestSyncReplyTimeout: a relay that accepts the connection and never
// answers (as a relay does for a request it cannot decode) ends Sync with
// a RelayError with code RelayNoReply after the reply timeout (issue 16: it waited forever).
func TestSyncReplyTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			if _, _, err := ws.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	st, err := OpenStore(context.Background(), filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	_, err = Sync(ctx, url, OwnerFromSecret(Secret{1}), st, SyncOptions{ReplyTimeout: 300 * time.Millisecond})
	if !isNoReply(err) {
		t.Fatalf("Sync: %v, want RelayNoReply", err)
	}
	if d := time.Since(start); d > realtest.Scale(5*time.Second) {
		t.Fatalf("gave up after %v", d)
	}
	if !strings.Contains(err.Error(), "no reply within 300ms") {
		t.Fatalf("message: %v", err)
	}
}

// TestMnemonicSecret: Evolu's mnemonic of a secret parses to the secret.
func TestMnemonicSecret(t *testing.T) {
	s := Secret{1, 2, 3}
	back, err := ParseSecret(s.Mnemonic())
	if err != nil || back != s {
		t.Fatalf("ParseSecret(mnemonic) = %x, %v", back, err)
	}
	if back, err := ParseSecret(s.String()); err != nil || back != s {
		t.Fatalf("ParseSecret(hex) = %x, %v", back, err)
	}
	if _, err := ParseSecret("abandon abandon"); err == nil {
		t.Fatal("a short mnemonic parsed")
	}
}

func isNoReply(err error) bool {
	var re *RelayError
	return errors.As(err, &re) && re.Code == RelayNoReply
}
