package tandem

import (
	"path/filepath"
	"testing"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/imaphub"
)

// Pairing on real servers (§6.3): the new device gets the hub from the QR
// payload only, each side reads its own code, the showing device approves,
// and the new device syncs and sees the first device's list; both can
// then write. The pairing channel is empty afterwards. Dovecot user elena
// and Cyrus user felix are used by no other test.
func TestPairingDovecot(t *testing.T) {
	h := dovecotHub(t, "elena")
	pairingOnHub(t, h, func() hub.Store {
		s, err := imaphub.Open(t.Context(), imaphub.Config{Addr: realtest.Getenv("FERRY_DOVECOT_ADDR"), User: h.user, Password: h.password})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestPairingCyrusJMAP(t *testing.T) {
	h, s, _, _ := cyrusJMAP(t, "felix")
	pairingOnHub(t, h, func() hub.Store { return s })
}

func pairingOnHub(t *testing.T, h Hub, raw func() hub.Store) {
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
	if n := pairMsgsOn(t, raw(), tag); n != 0 {
		t.Fatalf("%d pairing messages left on the hub", n)
	}
}
