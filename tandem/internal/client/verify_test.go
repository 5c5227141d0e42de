package client

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/record"
	"github.com/ferry-sync/ferry/tandem/internal/roster"
)

// TestForgedWriteRejectedWhenItWouldBeHeld: the client verifies each data
// write once, before the roster judges it. A forged write is rejected at
// once, reported as roster.Chain.CheckWrite reported it and as the record
// layer's signature error, even when it names a statement the device does
// not know (which would hold a genuine write), and even beside a genuine
// write that would be held: the message is rejected as a whole, nothing is
// held and nothing is merged.
func TestForgedWriteRejectedWhenItWouldBeHeld(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	genuine := buildWrite(t, f.c, f.a.id, [32]byte{42}, f.milk)
	forged := SignedWrite{Body: genuine.Body(), Sig: genuine.Sig()}
	forged.Body.Value = []byte("Whisky")

	for name, ws := range map[string][]SignedWrite{
		"alone":               {forged},
		"after a held write":  {signedWrites(genuine)[0], forged},
		"before a held write": {forged, signedWrites(genuine)[0]},
	} {
		t.Run(name, func(t *testing.T) {
			sealInject(t, f, ch, &RecordPayload{Record: f.milk, Writes: ws})
			before := stateBytes(t, f.b, f.c)
			rep := syncT(t, f.b)
			if len(rep.Rejected) != 1 || rep.Held != 0 {
				t.Fatalf("report %+v, want one rejected message and none held", rep)
			}
			err := rep.Rejected[0]
			for _, want := range []error{ErrRejected, roster.ErrRejected, roster.ErrSignature, record.ErrSignature} {
				if !errors.Is(err, want) {
					t.Fatalf("rejected with %v, want %v", err, want)
				}
			}
			if !bytes.Equal(before, stateBytes(t, f.b, f.c)) {
				t.Fatal("a forged message changed the state")
			}
		})
	}
}

// TestHeldWritesNeedProof: held messages keep their writes as
// record.Verified, and admitting them goes through
// roster.Chain.CheckVerified, which refuses a Verified that
// record.Validator.Verify did not produce. An unverified write cannot be
// slipped into the held queue and merged on release.
func TestHeldWritesNeedProof(t *testing.T) {
	f := newFixture(t)
	ch := f.collectionChannel()
	f.b.mu.Lock()
	bch := f.b.chans[ch.tag]
	before, _ := bch.coll.state.MarshalBinary()
	err := f.b.admitData(&opened{ch: bch, data: []*record.Verified{{}}})
	after, _ := bch.coll.state.MarshalBinary()
	f.b.mu.Unlock()
	if !errors.Is(err, roster.ErrRejected) || !errors.Is(err, record.ErrUnverified) {
		t.Fatalf("admitData of a zero Verified: %v, want ErrUnverified", err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("an unverified write changed the state")
	}
}
