package tandem

import (
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-sync/ferry/tandem/internal/pairing"
	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// declineSetup starts an offer that lives a minute, a join to it, and the
// request answered, its code shown on the new device.
func declineSetup(t *testing.T, n pairNet) (*Device, *PairingOffer, *PairingJoin, *PairingRequest) {
	t.Helper()
	a := openT(t, filepath.Join(t.TempDir(), "a"), n.with("Jesper"))
	t.Cleanup(func() { a.Close() })
	ctx := t.Context()
	offer, err := a.addDevice(ctx, n.ttl(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { offer.Close(t.Context()) })
	j := pairJoinT(t, n, filepath.Join(t.TempDir(), "b"), offer.Payload(), "tablet")
	req, err := offer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if code, err := j.Code(ctx); err != nil || code != req.Code() {
		t.Fatalf("code %q, %v; the offer shows %q", code, err, req.Code())
	}
	return a, offer, j, req
}

// A request the person says no to on the showing device is told to the new
// device, which ends at once with the sentence, not at the code's expiry;
// the pairing's messages are gone from the hub afterwards
// (docs/decisions/tandem-pairing-refusal.md).
func TestPairingDeclineTold(t *testing.T) { forPairNets(t, testPairingDeclineTold) }

func testPairingDeclineTold(t *testing.T, n pairNet) {
	_, offer, j, req := declineSetup(t, n)
	ctx := t.Context()
	for range 2 { // declining twice posts one decline
		if err := req.Decline(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := newEavesdropper(t, n.raw, offer.Payload()).count(t, pairing.KindDecline); got != 1 {
		t.Fatalf("%d declines on the hub, want 1", got)
	}
	d, err := j.Device(ctx)
	if d != nil || CodeOf(err) != CodePairing || !strings.Contains(err.(*Error).Message, "said no") {
		t.Fatalf("the new device after a decline: %v (want CodePairing, \"said no\")", err)
	}
	if !time.Now().Before(offer.Expires()) {
		t.Fatal("the new device learnt of the decline only at the expiry")
	}
	if _, err := j.Device(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("Device again after the decline: %v", err)
	}
	if err := req.Approve(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("approving the declined request: %v", err)
	}
	tag := pairTag(t, offer.Payload())
	offer.Close(ctx)
	if left := pairMsgsOn(t, n.raw, tag); left != 0 {
		t.Fatalf("%d pairing messages left on the hub", left)
	}
}

// A decline posted by someone who captured the QR code (they hold P and
// read the challenge's nonce, but not the user's key) is ignored: the new
// device goes on waiting, and the real approval adds it.
func TestPairingForgedDeclineIgnored(t *testing.T) { forPairNets(t, testPairingForgedDeclineIgnored) }

func testPairingForgedDeclineIgnored(t *testing.T, n pairNet) {
	a, offer, j, req := declineSetup(t, n)
	ctx := t.Context()
	ed := newEavesdropper(t, n.raw, offer.Payload())
	msgs, err := ed.all(t)
	if err != nil {
		t.Fatal(err)
	}
	ek := j.j.Pub()
	forged := 0
	for _, m := range msgs {
		if m.Kind != pairing.KindChallenge || m.EK != ek {
			continue
		}
		no := pairing.Msg{Kind: pairing.KindDecline, EK: ek}
		copy(no.Sig[:], ed25519.Sign(ed.key, suite.PairDeclineSigInput(ed.ch.Pairing().Secret, ek, m.N)))
		if _, err := ed.ch.Post(ctx, no); err != nil {
			t.Fatal(err)
		}
		forged++
	}
	if forged != 1 {
		t.Fatalf("%d challenges for the new device's key on the hub, want 1", forged)
	}
	if got := ed.count(t, pairing.KindDecline); got != 1 {
		t.Fatalf("%d declines on the hub, want the forged one", got)
	}
	if err := req.Approve(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := j.Device(ctx)
	if err != nil {
		t.Fatalf("the new device after a forged decline and the approval: %v", err)
	}
	defer b.Close()
	if b.UserID() != a.UserID() {
		t.Fatal("the new device is not the user")
	}
	if err := req.Decline(ctx); CodeOf(err) != CodePairing {
		t.Fatalf("declining an approved request: %v", err)
	}
}
