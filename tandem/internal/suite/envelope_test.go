package suite

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"testing"
)

func testChannel() ([32]byte, string) {
	k := seed("test", 0, "key")
	return k, CollectionTag(k, seed("test", 0, "epoch"))
}

func TestEnvelopeRoundTripAndRejections(t *testing.T) {
	key, tag := testChannel()
	pt := []byte(`{"rec":"x"}`)
	for _, kind := range []Kind{KindRecord, KindRequest} {
		env, err := SealEnvelope(kind, key, tag, pt, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k, got, err := OpenEnvelope(key, tag, env)
		if err != nil || k != kind || !bytes.Equal(got, pt) {
			t.Fatalf("round trip: %v", err)
		}
		otherKey := key
		otherKey[0] ^= 1
		_, otherTag := testChannel()
		otherTag = "a" + otherTag[1:]
		if otherTag == tag {
			otherTag = "b" + otherTag[1:]
		}
		mut := func(i int, v byte) []byte { e := bytes.Clone(env); e[i] = v; return e }
		cases := []struct {
			name   string
			key    [32]byte
			tag    string
			env    []byte
			reason error
		}{
			{"wrong key", otherKey, tag, env, ErrEnvelopeAuth},
			{"wrong tag", key, otherTag, env, ErrEnvelopeAuth},
			{"bad tag form", key, "ABC", env, ErrBadTag},
			{"magic", key, tag, mut(0, 'X'), ErrEnvelopeMagic},
			{"version", key, tag, mut(4, 2), ErrEnvelopeVersion},
			{"reserved kind", key, tag, mut(5, 9), ErrEnvelopeKind},
			{"inbox kind", key, tag, mut(5, 2), ErrEnvelopeKind},
			{"swapped kind", key, tag, mut(5, byte(4-kind)), ErrEnvelopeAuth},
			{"short", key, tag, env[:EnvelopeHeaderLen+15], ErrEnvelopeShort},
			{"empty", key, tag, nil, ErrEnvelopeShort},
		}
		for _, c := range cases {
			_, _, err := OpenEnvelope(c.key, c.tag, c.env)
			var ee *EnvelopeError
			if !errors.Is(err, ErrEnvelope) || !errors.Is(err, c.reason) || !errors.As(err, &ee) {
				t.Errorf("kind %d %s: %v, want %v", kind, c.name, err, c.reason)
			}
		}
		// Every single modified byte after the header's version is detected.
		for i := 6; i < len(env); i++ {
			if _, _, err := OpenEnvelope(key, tag, mut(i, env[i]^0x80)); !errors.Is(err, ErrEnvelopeAuth) {
				t.Fatalf("byte %d modified: %v", i, err)
			}
		}
	}
	if _, err := SealEnvelopeWithSalt(KindInbox, key, [32]byte{}, tag, pt); !errors.Is(err, ErrEnvelopeKind) {
		t.Fatalf("symmetric seal of kind 2: %v", err)
	}
}

func TestInboxRoundTripAndRejections(t *testing.T) {
	alice := NewIdentity(seed("test", 1, "alice"))
	bob := NewIdentity(seed("test", 2, "bob"))
	pt := []byte(`{"type":"grant"}`)
	env, err := SealInbox(alice.UKa, alice.InboxTag, pt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenInbox(alice, alice.InboxTag, env)
	if err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := OpenInbox(bob, alice.InboxTag, env); !errors.Is(err, ErrEnvelopeKID) {
		t.Fatalf("other recipient: %v", err)
	}
	if _, err := OpenInbox(alice, bob.InboxTag, env); !errors.Is(err, ErrEnvelopeAuth) {
		t.Fatalf("other tag: %v", err)
	}
	for i := EnvelopeHeaderLen; i < len(env); i++ {
		e := bytes.Clone(env)
		e[i] ^= 1
		if _, err := OpenInbox(alice, alice.InboxTag, e); !errors.Is(err, ErrEnvelope) {
			t.Fatalf("byte %d modified: %v", i, err)
		}
	}
	e := bytes.Clone(env)
	e[5] = byte(KindRecord)
	if _, err := OpenInbox(alice, alice.InboxTag, e); !errors.Is(err, ErrEnvelopeKind) {
		t.Fatalf("kind 1 on inbox: %v", err)
	}
	if _, _, err := OpenEnvelope(alice.HomeKey, alice.InboxTag, env); !errors.Is(err, ErrEnvelopeKind) {
		t.Fatalf("inbox envelope opened as symmetric: %v", err)
	}
}

func TestPairReply(t *testing.T) {
	user := NewIdentity(seed("test", 3, "user"))
	ek, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ekPub := [32]byte(ek.PublicKey().Bytes())
	sealed, err := SealPairReply(user, ekPub)
	if err != nil {
		t.Fatal(err)
	}
	id, err := OpenPairReply(ek, user.UID, sealed)
	if err != nil || id.Secret != user.Secret {
		t.Fatalf("open: %v", err)
	}
	other := NewIdentity(seed("test", 4, "other"))
	if _, err := OpenPairReply(ek, other.UID, sealed); !errors.Is(err, ErrEnvelopeAuth) {
		t.Fatalf("uid in the QR differs: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := OpenPairReply(ek, user.UID, sealed); !errors.Is(err, ErrEnvelopeAuth) {
		t.Fatalf("modified: %v", err)
	}
	if _, err := OpenPairReply(ek, user.UID, sealed[:10]); !errors.Is(err, ErrEnvelopeShort) {
		t.Fatalf("short: %v", err)
	}
}

func FuzzOpenEnvelope(f *testing.F) {
	key, tag := testChannel()
	for _, kind := range []Kind{KindRecord, KindRequest} {
		env, _ := SealEnvelopeWithSalt(kind, key, seed("fuzz", int(kind), "salt"), tag, []byte(`{"a":1}`))
		f.Add(env)
	}
	alice := NewIdentity(seed("test", 1, "alice"))
	inbox, _ := SealInbox(alice.UKa, alice.InboxTag, []byte("x"))
	f.Add(inbox)
	f.Add([]byte("TNDM\x01\x01"))
	f.Fuzz(func(t *testing.T, env []byte) {
		kind, pt, err := OpenEnvelope(key, tag, env)
		if err == nil {
			// Only an envelope sealed with the key and tag opens: sealing
			// the plaintext again with its salt must give the same bytes.
			re, err := SealEnvelopeWithSalt(kind, key, [32]byte(env[6:38]), tag, pt)
			if err != nil || !bytes.Equal(re, env) {
				t.Fatalf("opened an envelope that does not re-seal to itself: %v", err)
			}
		} else if !errors.Is(err, ErrEnvelope) {
			t.Fatalf("untyped error %v", err)
		}
		if _, err := OpenInbox(alice, alice.InboxTag, env); err != nil && !errors.Is(err, ErrEnvelope) {
			t.Fatalf("untyped inbox error %v", err)
		}
	})
}
