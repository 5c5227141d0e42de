package tandem

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/internal/realtest"
	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/hub/memhub"
	"github.com/ferry-sync/ferry/tandem/internal/pairing"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// pairT runs one pairing between a showing device and a new one in dir,
// each side reading its own code; the codes must match.
func pairT(t *testing.T, a *Device, dir string, opts Options) (*Device, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		t.Fatalf("AddDevice: %v", err)
	}
	defer offer.Close(ctx)
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	join, err := JoinDevice(ctx, dir, offer.Payload(), opts)
	if err != nil {
		t.Fatalf("JoinDevice: %v", err)
	}
	defer join.Close(ctx)
	req, err := offer.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	code, err := join.Code(ctx)
	if err != nil {
		t.Fatalf("Code: %v", err)
	}
	if len(code) != 6 || code != req.Code() {
		t.Fatalf("codes: new device %q, showing device %q", code, req.Code())
	}
	if req.Name() != opts.Name {
		t.Fatalf("request name %q, want %q", req.Name(), opts.Name)
	}
	if err := req.Approve(ctx); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	b, err := join.Device(ctx)
	if err != nil {
		t.Fatalf("Device: %v", err)
	}
	if err := offer.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return b, pairTag(t, offer.Payload())
}

// pairTag is the pairing channel's tag of a payload.
func pairTag(t *testing.T, payload string) string {
	t.Helper()
	pl, err := pairing.ParsePayload(payload)
	if err != nil {
		t.Fatal(err)
	}
	return suite.NewPairing(pl.P).Tag
}

// pairMsgsOn counts the hub's messages on channel tag.
func pairMsgsOn(t *testing.T, s hub.Store, tag string) int {
	t.Helper()
	ch, err := s.Changes(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range ch.Added {
		if a.Channel == tag {
			n++
		}
	}
	return n
}

func pairB64(b []byte) string { return tjson.B64U(b) }

// The new device becomes the same user with a device ID of its own, and
// after its first Sync has every list of the first device.
func TestPairingMemhub(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	c, _ := a.NewCollection("Groceries")
	milk, _ := a.NewRecord(c, map[string][]byte{"title": []byte("Milk")})
	syncT(t, a)
	// Jesper is also a member of Aimee's House.
	aimee := openT(t, filepath.Join(t.TempDir(), "aimee"), Options{Name: "Aimee", Store: memStore(srv)})
	defer aimee.Close()
	house, _ := aimee.NewCollection("House")
	shareWith(t, aimee, a, house, "Jesper")

	b, tag := pairT(t, a, filepath.Join(t.TempDir(), "b"), Options{Name: "Jesper's tablet", Store: memStore(srv)})
	defer b.Close()
	if b.UserID() != a.UserID() || b.DeviceID() == a.DeviceID() {
		t.Fatalf("new device: user %v (want %v), device ID %x (first device %x)", b.UserID(), a.UserID(), b.DeviceID(), a.DeviceID())
	}
	syncT(t, b)
	if r, err := b.Record(c, milk); err != nil || r.Get("title") != "Milk" {
		t.Fatalf("the list on the new device: %v %+v", err, r)
	}
	// Every active membership is followed (§6.3 step 5), others' too.
	if st, err := b.CollectionState(house); err != nil || st != StateFollowing || membershipT(t, b, house) != MembershipActive {
		t.Fatalf("Aimee's House on the new device: %v %v %v", st, membershipT(t, b, house), err)
	}
	// Both sides removed the pairing messages: only the sync data is left.
	if n := pairMsgsOn(t, srv.Open(), tag); n != 0 {
		t.Fatalf("%d pairing messages left on the hub", n)
	}
	// And the new device writes as itself.
	b.SetString(c, milk, "title", "Oat milk")
	syncT(t, b)
	syncT(t, a)
	if r, _ := a.Record(c, milk); r.Get("title") != "Oat milk" {
		t.Fatalf("first device after the new one wrote: %+v", r)
	}
}

// A payload with a duplicate key is refused whole (§10.5), and nothing is
// posted or created.
func TestPairingPayloadDuplicateKey(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	offer, err := a.AddDevice(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(t.Context())
	p := offer.Payload()
	dup := p[:len(p)-1] + `,"u":"` + pairB64(make([]byte, 32)) + `"}`
	dir := filepath.Join(t.TempDir(), "b")
	before := len(hubIDs(t, srv.Open()))
	_, err = JoinDevice(t.Context(), dir, dup, Options{Store: memStore(srv), Logger: quiet()})
	if CodeOf(err) != CodeInvalid || !errors.Is(err, tjson.ErrDuplicateName) {
		t.Fatalf("payload with a duplicate key: %v, want CodeInvalid for the duplicate", err)
	}
	if _, err := pairing.ParsePayload(p); err != nil {
		t.Fatalf("the payload itself: %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Fatal("a refused payload created the directory")
	}
	if n := len(hubIDs(t, srv.Open())); n != before {
		t.Fatalf("a refused payload posted %d messages", n-before)
	}
}

// An expired payload gives the §13.3 message on the new device, and the
// showing device's Next ends with it at the expiry.
func TestPairingExpired(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	offer, err := a.addDevice(t.Context(), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(t.Context())
	start := time.Now()
	_, err = offer.Next(t.Context())
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeExpired || e.Message != "This code has expired. Ask for a new one." {
		t.Fatalf("Next after the expiry: %v", err)
	}
	if time.Since(start) > realtest.Scale(5*time.Second) {
		t.Fatalf("Next ran %v past a 300 ms expiry", time.Since(start))
	}
	dir := filepath.Join(t.TempDir(), "b")
	_, err = JoinDevice(t.Context(), dir, offer.Payload(), Options{Store: memStore(srv), Logger: quiet()})
	if !errors.As(err, &e) || e.Code != CodeExpired || e.Message != msgCodeExpired {
		t.Fatalf("JoinDevice with an expired payload: %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Fatal("an expired payload created the directory")
	}
}

// A payload naming another hub than the one the new device has is refused
// with the §13.3 message (one hub per client, §1.2, §11.2).
func TestPairingDifferentHub(t *testing.T) {
	pl := pairing.Payload{Hub: IMAPHub("imap.example.com", 993, "jesper", "pw").d, Exp: time.Now().Add(time.Minute)}
	payload, err := pl.Encode()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "b")
	_, err = JoinDevice(t.Context(), dir, payload, Options{Hub: IMAPHub("imap.other.example", 993, "me", "pw"), Logger: quiet()})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeDifferentHub || e.Message != msgOtherHub {
		t.Fatalf("a payload for another hub: %v", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		t.Fatal("a refused payload created the directory")
	}
}

// A directory that already holds a device is refused before anything is
// posted.
func TestPairingIntoExistingDevice(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	other := filepath.Join(t.TempDir(), "other")
	openT(t, other, Options{Store: memStore(srv)}).Close()
	offer, err := a.AddDevice(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(t.Context())
	before := len(hubIDs(t, srv.Open()))
	if _, err := JoinDevice(t.Context(), other, offer.Payload(), Options{Store: memStore(srv), Logger: quiet()}); CodeOf(err) != CodeExists {
		t.Fatalf("pairing into a directory with a device: %v, want CodeExists", err)
	}
	if n := len(hubIDs(t, srv.Open())); n != before {
		t.Fatal("the refused join posted a request")
	}
}

// One approval per offer: after it, Next and a second Approve fail with
// CodePairing, and a declined request cannot be approved.
func TestPairingOneApproval(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	ctx := t.Context()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer offer.Close(ctx)
	j1, _ := JoinDevice(ctx, filepath.Join(t.TempDir(), "b1"), offer.Payload(), Options{Name: "one", Store: memStore(srv), Logger: quiet()})
	defer j1.Close(ctx)
	j2, _ := JoinDevice(ctx, filepath.Join(t.TempDir(), "b2"), offer.Payload(), Options{Name: "two", Store: memStore(srv), Logger: quiet()})
	defer j2.Close(ctx)
	r1, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r1.Decline(ctx)
	if err := r1.Approve(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("approving a declined request: %v", err)
	}
	if err := r2.Approve(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r2.Approve(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("a second approval: %v", err)
	}
	if _, err := offer.Next(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("Next after the approval: %v", err)
	}
}

// Close ends a Next that is waiting, and removes the offer's messages.
func TestPairingCloseEndsNext(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	offer, err := a.AddDevice(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	j, _ := JoinDevice(t.Context(), filepath.Join(t.TempDir(), "b"), offer.Payload(), Options{Store: memStore(srv), Logger: quiet()})
	defer j.Close(t.Context())
	if _, err := offer.Next(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := offer.Next(t.Context()); done <- err }()
	time.Sleep(100 * time.Millisecond)
	if err := offer.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if CodeOf(err) != CodePairing {
			t.Fatalf("Next after Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end Next")
	}
	if n := len(hubIDs(t, srv.Open())); n != 0 {
		t.Fatalf("%d messages left after Close without approval", n)
	}
}

// Without a hub there is nothing to pair through: AddDevice gives
// CodeNoHub. An unreachable hub in the payload gives CodeOffline on the
// new device, with nothing created.
func TestPairingNoHub(t *testing.T) {
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper"})
	defer a.Close()
	if _, err := a.AddDevice(t.Context()); CodeOf(err) != CodeNoHub {
		t.Fatalf("AddDevice without a hub: %v, want CodeNoHub", err)
	}
	pl := pairing.Payload{Hub: IMAPHub("127.0.0.1", 1, "jesper", "pw").d, Exp: time.Now().Add(time.Minute)}
	payload, _ := pl.Encode()
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := JoinDevice(t.Context(), dir, payload, Options{Logger: quiet()}); CodeOf(err) != CodeOffline {
		t.Fatalf("JoinDevice with the hub down: %v, want CodeOffline", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a failed join created the directory")
	}
	pl.Hub = Hub{}.d
	payload, _ = pl.Encode()
	if _, err := JoinDevice(t.Context(), dir, payload, Options{Logger: quiet()}); CodeOf(err) != CodeNoHub {
		t.Fatalf("a payload without a hub on a device without one: %v, want CodeNoHub", err)
	}
}

// A name that could fake the approval line (a tab here; the wire rules:
// pairing.TestNameControls) is refused on the new device before anything
// is posted.
func TestPairingNameControls(t *testing.T) {
	pl := pairing.Payload{Exp: time.Now().Add(time.Minute)}
	payload, _ := pl.Encode()
	srv := memhub.NewServer()
	if _, err := JoinDevice(t.Context(), filepath.Join(t.TempDir(), "b"), payload, Options{Name: "a\tb", Store: memStore(srv)}); CodeOf(err) != CodeInvalid {
		t.Fatalf("JoinDevice with a tab in the name: %v", err)
	}
}

// Closing the QR screen right after "Add" loses nothing: Close keeps the
// approved challenge and the reply for the new device, which removes them.
func TestPairingCloseAfterApprove(t *testing.T) {
	srv := memhub.NewServer()
	a := openT(t, filepath.Join(t.TempDir(), "a"), Options{Name: "Jesper", Store: memStore(srv)})
	defer a.Close()
	ctx := t.Context()
	offer, err := a.AddDevice(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j, err := JoinDevice(ctx, filepath.Join(t.TempDir(), "b"), offer.Payload(), Options{Name: "tablet", Store: memStore(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close(ctx)
	req, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Approve(ctx); err != nil {
		t.Fatal(err)
	}
	if err := offer.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tag := pairTag(t, offer.Payload())
	if n := pairMsgsOn(t, srv.Open(), tag); n != 2 {
		t.Fatalf("%d messages left after Close, want the challenge and the reply", n)
	}
	b, err := j.Device(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.UserID() != a.UserID() {
		t.Fatal("wrong user")
	}
	if n := pairMsgsOn(t, srv.Open(), tag); n != 0 {
		t.Fatalf("%d pairing messages left after the new device took the reply", n)
	}
}
