package suite

import (
	"crypto/ed25519"
	"errors"
	"testing"
)

func TestSignWriteVerifyStrict(t *testing.T) {
	id := NewIdentity([32]byte{1})
	w := &WriteBody{Field: "title", Op: OpAssign, Value: []byte("x"), Author: id.UID,
		Dot:     Dot{Device: DeviceID{1}, HLC: HLC{Millis: 5}},
		Context: VV{{Device: DeviceID{1}}, {Device: DeviceID{2}}}}
	si, wid, sig, err := SignWrite(id.SignKey, w)
	if err != nil {
		t.Fatal(err)
	}
	if wid != H(si) {
		t.Fatal("write ID is not H(sigInput)")
	}
	if !VerifyStrict(id.UID[:], si, sig) {
		t.Fatal("VerifyStrict rejects a valid signature")
	}
	if !ed25519.Verify(ed25519.PublicKey(id.UID[:]), si, sig) {
		t.Fatal("ed25519.Verify disagrees")
	}
	si[len(si)-1] ^= 1
	if VerifyStrict(id.UID[:], si, sig) {
		t.Fatal("VerifyStrict accepts a modified message")
	}
	if _, err := VerifyWrite(w, sig); err != nil {
		t.Fatal(err)
	}
	w.Context = VV{{Device: DeviceID{2}}, {Device: DeviceID{1}}}
	if _, err := w.SigInput(); !errors.Is(err, ErrVVUnsorted) {
		t.Fatalf("unsorted context: %v", err)
	}
	w.Context = make(VV, MaxVVEntries+1)
	if _, err := w.SigInput(); !errors.Is(err, ErrVVTooLong) {
		t.Fatalf("long context: %v", err)
	}
}
