package tandem_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-sync/ferry/tandem"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
)

// Restoring from the backup key through the public API (§6.3
// "Restoring"): the key as shown (backupGroups of four) or typed in upper case
// gives the same user with a new device ID, who finds the lists at the
// first Sync. A key with a wrong check character, or a typo anywhere, is
// refused with CodeBackupKey and creates nothing.
func TestRestoreFromBackupKey(t *testing.T) {
	ctx := t.Context()
	srv := memhub.NewServer()
	store := func(context.Context) (hub.Store, error) { return srv.Open(), nil }
	tmp := t.TempDir()
	a, err := tandem.Open(ctx, filepath.Join(tmp, "a"), tandem.Options{Name: "Jesper", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	key, ok := a.BackupKey()
	if !ok || len(key) != 56 {
		t.Fatalf("backup key %q", key)
	}
	list, _ := a.NewCollection("Groceries")
	milk, _ := a.NewRecord(list, map[string][]byte{"title": []byte("Milk")})
	if _, err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	for name, bad := range map[string]string{
		"wrong check character": key[:55] + flipB32(key[55]),
		"typo in the secret":    key[:10] + flipB32(key[10]) + key[11:],
		"one character short":   key[:55],
		"not base32":            key[:55] + "1",
	} {
		dir := filepath.Join(tmp, "bad")
		_, err := tandem.Restore(ctx, dir, bad, tandem.Options{Store: store})
		var e *tandem.Error
		if !errors.As(err, &e) || e.Code != tandem.CodeBackupKey || strings.Contains(e.Message, "\n") {
			t.Fatalf("%s: %v, want CodeBackupKey", name, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the refused key created %s", name, dir)
		}
	}

	shown := strings.ToUpper(backupGroups(key))
	b, err := tandem.Restore(ctx, filepath.Join(tmp, "b"), shown, tandem.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.UserID() != a.UserID() || b.DeviceID() == a.DeviceID() {
		t.Fatal("restored device: not the same user, or the same device ID")
	}
	if _, err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := b.Record(list, milk); err != nil || r.Get("title") != "Milk" {
		t.Fatalf("the list after restoring: %v %+v", err, r)
	}
}

// flipB32 returns another base32 character than c.
func flipB32(c byte) string {
	if c == 'a' {
		return "b"
	}
	return "a"
}

func backupGroups(s string) string {
	var g []string
	for i := 0; i < len(s); i += 4 {
		g = append(g, s[i:min(i+4, len(s))])
	}
	return strings.Join(g, " ")
}
