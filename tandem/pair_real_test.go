package tandem

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
	"github.com/ferry-sync/ferry/tandem/hub/jmaphub"
)

// Accounts of the pairing and start-over tests, used by no other test:
// user dmitri on Dovecot and on Cyrus.
const (
	pairDovecotUser = "dmitri"
	pairCyrusUser   = "dmitri"
)

// pairHub returns the hub of a real server ("dovecot" for IMAP, "cyrus"
// for JMAP) for the test account, with its Tandem folder emptied, and a
// raw connection to it that is closed when tb ends.
func pairHub(tb testing.TB, server string) (Hub, hub.Store) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var h Hub
	var s hub.Store
	var err error
	switch server {
	case "dovecot":
		addr, pass := realtest.Getenv("FERRY_DOVECOT_ADDR"), pairPassword(realtest.Getenv("FERRY_DOVECOT_USERS"), " ", pairDovecotUser)
		if addr == "" || pass == "" {
			realtest.Unavailable(tb, "FERRY_DOVECOT_ADDR / FERRY_DOVECOT_USERS with user "+pairDovecotUser+" (run scripts/setup.d/10-dovecot.sh)")
		}
		host, port, _ := strings.Cut(addr, ":")
		p, _ := strconv.Atoi(port)
		h = IMAPHub(host, p, pairDovecotUser, pass)
		s, err = imaphub.Open(ctx, imaphub.Config{Addr: addr, User: pairDovecotUser, Password: pass})
	case "cyrus":
		url, pass := realtest.Getenv("FERRY_CYRUS_JMAP_URL"), pairPassword(realtest.Getenv("FERRY_CYRUS_USERS"), ",", pairCyrusUser)
		if url == "" || pass == "" {
			realtest.Unavailable(tb, "FERRY_CYRUS_JMAP_URL / FERRY_CYRUS_USERS with user "+pairCyrusUser+" (run scripts/setup.d/20-cyrus.sh)")
		}
		h = JMAPBasicHub(url, pairCyrusUser, pass)
		s, err = jmaphub.Open(ctx, jmaphub.Config{SessionURL: url, Username: pairCyrusUser, Password: pass})
	}
	if err != nil {
		tb.Fatalf("%s: %v", server, err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.EnsureFolder(ctx); err != nil {
		tb.Fatal(err)
	}
	ch, err := s.Changes(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	var ids []hub.ID
	for _, a := range ch.Added {
		ids = append(ids, a.ID)
	}
	if err := s.Destroy(ctx, ids); err != nil {
		tb.Fatal(err)
	}
	return h, s
}

// pairPassword finds user's password in a list of user:password pairs.
func pairPassword(list, sep, user string) string {
	for _, up := range strings.Split(list, sep) {
		if u, p, ok := strings.Cut(strings.TrimSpace(up), ":"); ok && u == user {
			return p
		}
	}
	return ""
}

// Pairing on real servers (§6.3): the new device gets the hub from the QR
// payload only, each side reads its own code, the showing device approves,
// and the new device syncs and sees the first device's list; both can
// then write. The pairing channel is empty afterwards.
func TestPairingDovecot(t *testing.T) {
	h, raw := pairHub(t, "dovecot")
	pairingOnHub(t, h, raw)
}

func TestPairingCyrusJMAP(t *testing.T) {
	h, raw := pairHub(t, "cyrus")
	pairingOnHub(t, h, raw)
}

func pairingOnHub(t *testing.T, h Hub, raw hub.Store) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Hub: h})
	defer a.Close()
	c, _ := a.NewCollection("House")
	paint, _ := a.NewRecord(c, map[string][]byte{"title": []byte("Paint the fence")})
	a.AddElement(c, paint, "tags", []byte("garden"))
	syncT(t, a)

	b, tag := pairT(t, a, filepath.Join(t.TempDir(), "b"), Options{Name: "Jesper's laptop"})
	defer b.Close()
	if b.UserID() != a.UserID() || b.DeviceID() == a.DeviceID() {
		t.Fatal("the new device is not the same user with a device ID of its own")
	}
	if !b.Hub().Same(h) {
		t.Fatalf("the new device's hub is %v, want %v from the QR code", b.Hub(), h)
	}
	syncT(t, b)
	r, err := b.Record(c, paint)
	if err != nil || r.Get("title") != "Paint the fence" || len(r.Fields["tags"].Elements) != 1 {
		t.Fatalf("the list on the new device: %v %+v", err, r)
	}
	if names, _ := b.Name(c); len(names) != 1 || names[0].String() != "House" {
		t.Fatalf("the list's name on the new device: %v", names)
	}
	b.SetString(c, paint, "title", "Paint the fence green")
	syncT(t, b)
	syncT(t, a)
	if r, _ := a.Record(c, paint); r.Get("title") != "Paint the fence green" {
		t.Fatalf("the first device after the new one wrote: %+v", r)
	}
	if n := pairMsgsOn(t, raw, tag); n != 0 {
		t.Fatalf("%d pairing messages left on the hub", n)
	}
}
