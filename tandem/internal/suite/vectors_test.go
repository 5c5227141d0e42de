package suite

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"testing"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// loadVectors reads the published vectors with the strict reader.
func loadVectors(t *testing.T) *vectorFile {
	t.Helper()
	data, err := os.ReadFile(vectorPath)
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := tjson.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

func a32(t *testing.T, b []byte) [32]byte {
	t.Helper()
	if len(b) != 32 {
		t.Fatalf("want 32 bytes, have %d", len(b))
	}
	return [32]byte(b)
}

func a16(t *testing.T, b []byte) [16]byte {
	t.Helper()
	if len(b) != 16 {
		t.Fatalf("want 16 bytes, have %d", len(b))
	}
	return [16]byte(b)
}

func eq(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %x\nwant %x", what, got, want)
	}
}

func eqs(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func TestVectorSectionSizes(t *testing.T) {
	f := loadVectors(t)
	sizes := map[string]int{
		"users": len(f.Users), "named_records": len(f.NamedRecords), "commitments": len(f.Commitments),
		"collection_tags": len(f.CollectionTags), "invites": len(f.Invites), "pairings": len(f.Pairings),
		"envelopes": len(f.Envelopes), "inbox": len(f.Inbox), "writes": len(f.Writes),
		"inventories": len(f.Inventories), "ed25519": len(f.Ed25519), "signed_objects": len(f.SignedObjects),
		"backup_key_inputs": len(f.BackupInputs), "pair_replies": len(f.PairReplies),
	}
	for name, n := range sizes {
		if n < 3 {
			t.Errorf("section %s has %d entries, want at least 3", name, n)
		}
	}
}

func TestVectorUsers(t *testing.T) {
	for i, v := range loadVectors(t).Users {
		id := NewIdentity(a32(t, v.Secret))
		eq(t, "uid", id.UID[:], v.UID)
		eq(t, "uka", id.UKa[:], v.UKa)
		eq(t, "home_key", id.HomeKey[:], v.HomeKey)
		eqs(t, "home_tag", id.HomeTag, v.HomeTag)
		eqs(t, "inbox_tag", id.InboxTag, v.InboxTag)
		eq(t, "home_scope", id.HomeScope[:], v.HomeScope)
		eq(t, "kid", id.KID[:], v.KID)
		eqs(t, "backup_key", BackupKey(id.Secret), v.BackupKey)
		if len(v.BackupKey) != 56 || len(v.HomeTag) != 32 || len(v.InboxTag) != 32 {
			t.Errorf("user %d: wrong string lengths", i)
		}
		us, err := ParseBackupKey(v.BackupKey)
		if err != nil || us != id.Secret {
			t.Errorf("user %d: backup key does not parse back: %v", i, err)
		}
	}
}

func TestVectorNamedCommitTags(t *testing.T) {
	f := loadVectors(t)
	for _, v := range f.NamedRecords {
		id := NamedRecordID(v.Name)
		eq(t, "named "+v.Name, id[:], v.ID)
	}
	for _, v := range f.Commitments {
		c := Commit(a32(t, v.Key))
		eq(t, "commit", c[:], v.Commit)
	}
	for _, v := range f.CollectionTags {
		eqs(t, "collection tag", CollectionTag(a32(t, v.Key), a32(t, v.Epoch)), v.Tag)
	}
	for _, v := range f.Invites {
		inv := NewInvite(a32(t, v.Secret))
		eq(t, "invite sign_pub", inv.SignPub[:], v.SignPub)
		eq(t, "invite channel_key", inv.ChannelKey[:], v.ChannelKey)
		eqs(t, "invite tag", inv.Tag, v.Tag)
	}
	for _, v := range f.Pairings {
		p := NewPairing(a32(t, v.P))
		eq(t, "pairing key", p.Key[:], v.Key)
		eqs(t, "pairing tag", p.Tag, v.Tag)
		eqs(t, "pairing code", PairCode(p.Secret, a32(t, v.EK), a16(t, v.N)), v.Code)
	}
}

func TestVectorEnvelopes(t *testing.T) {
	for i, v := range loadVectors(t).Envelopes {
		key, salt := a32(t, v.Key), a32(t, v.Salt)
		env, err := SealEnvelopeWithSalt(Kind(v.Kind), key, salt, v.Tag, v.Plaintext)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "envelope", env, v.Envelope)
		kind, pt, err := OpenEnvelope(key, v.Tag, v.Envelope)
		if err != nil || kind != Kind(v.Kind) || !bytes.Equal(pt, v.Plaintext) {
			t.Errorf("envelope %d: open: kind %d, %v", i, kind, err)
		}
	}
}

func TestVectorInbox(t *testing.T) {
	for i, v := range loadVectors(t).Inbox {
		id := NewIdentity(a32(t, v.RecipientSecret))
		eqs(t, "inbox tag", id.InboxTag, v.Tag)
		pt, err := OpenInbox(id, v.Tag, v.Envelope)
		if err != nil || !bytes.Equal(pt, v.Plaintext) {
			t.Errorf("inbox %d: %v", i, err)
		}
		if !bytes.Equal(v.Envelope[6:38], id.KID[:]) {
			t.Errorf("inbox %d: kid not in place of the salt", i)
		}
	}
}

func vvFrom(t *testing.T, es []vvEntry) VV {
	var v VV
	for _, e := range es {
		if len(e.Device) != 8 {
			t.Fatalf("device of %d bytes", len(e.Device))
		}
		v = append(v, Dot{DeviceID(e.Device), HLC{e.Millis, e.Counter}})
	}
	return v
}

func TestVectorWrites(t *testing.T) {
	for i, v := range loadVectors(t).Writes {
		id := NewIdentity(a32(t, v.AuthorSecret))
		if len(v.Device) != 8 {
			t.Fatal("device")
		}
		w := &WriteBody{Scope: a16(t, v.Scope), Record: a16(t, v.Record), Field: v.Field, Op: Op(v.Op),
			Element: v.Element, Value: v.Value, Author: id.UID, Dot: Dot{DeviceID(v.Device), HLC{v.Millis, v.Counter}},
			Ref: a32(t, v.Ref), Context: vvFrom(t, v.Context), Base: vvFrom(t, v.Base)}
		si, wid, sig, err := SignWrite(id.SignKey, w)
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		eq(t, "sig_input", si, v.SigInput)
		eq(t, "write_id", wid[:], v.WriteID)
		eq(t, "sig", sig, v.Sig)
		if !VerifyStrict(id.UID[:], v.SigInput, v.Sig) {
			t.Errorf("write %d: published signature does not verify", i)
		}
	}
}

func TestVectorInventories(t *testing.T) {
	for i, v := range loadVectors(t).Inventories {
		var entries []InventoryEntry
		for _, r := range v.Records {
			e := InventoryEntry{Record: a16(t, r.ID)}
			for _, w := range r.Writes {
				e.Writes = append(e.Writes, a32(t, w))
			}
			entries = append(entries, e)
		}
		b, err := EncodeInventory(entries)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "inventory bytes", b, v.Bytes)
		h := InventoryHash(v.Bytes)
		eq(t, "inventory hash", h[:], v.Hash)
		dec, err := DecodeInventory(v.Bytes)
		if err != nil || len(dec) != len(entries) {
			t.Errorf("inventory %d: decode: %v", i, err)
		}
	}
}

func TestVectorEd25519(t *testing.T) {
	disagree := 0
	for _, v := range loadVectors(t).Ed25519 {
		if got := VerifyStrict(v.Pub, v.Msg, v.Sig); got != v.Valid {
			t.Errorf("%s: VerifyStrict = %v, want %v", v.Comment, got, v.Valid)
		}
		// Keys takes another path to the same answer (curve25519-voi on an
		// expanded key): cold, and with the key already remembered.
		var keys Keys
		if got := keys.VerifyStrict(v.Pub, v.Msg, v.Sig); got != v.Valid {
			t.Errorf("%s: Keys.VerifyStrict = %v, want %v", v.Comment, got, v.Valid)
		}
		if got := keys.VerifyStrict(v.Pub, v.Msg, v.Sig); got != v.Valid {
			t.Errorf("%s: Keys.VerifyStrict, key remembered = %v, want %v", v.Comment, got, v.Valid)
		}
		if len(v.Pub) == ed25519.PublicKeySize && ed25519.Verify(ed25519.PublicKey(v.Pub), v.Msg, v.Sig) != v.Valid {
			disagree++
		}
	}
	// The strict rules matter: the standard library accepts some of these.
	if disagree == 0 {
		t.Error("crypto/ed25519.Verify agrees with every vector; the edge cases are missing")
	}
}

func TestVectorSignedObjects(t *testing.T) {
	for _, v := range loadVectors(t).SignedObjects {
		x := func(name string) []byte {
			b, err := hex.DecodeString(v.Fields[name])
			if err != nil {
				t.Fatalf("%s.%s: %v", v.Type, name, err)
			}
			return b
		}
		var got []byte
		switch v.Type {
		case "join":
			got = JoinSigInput(a16(t, x("collection")), a16(t, x("invite")), a32(t, x("uid")), a32(t, x("uka")), v.Fields["name"])
		case "invite":
			got = InviteSigInput(a16(t, x("collection")), a16(t, x("invite")), a32(t, x("uid")))
		case "grant":
			got = GrantSigInput(a32(t, x("recipient")), a16(t, x("collection")), a32(t, x("at")), a32(t, x("epoch")), a32(t, x("key")))
		case "keyreq":
			got = KeyReqSigInput(a16(t, x("collection")), a32(t, x("have")), a32(t, x("uid")))
		case "leave":
			got = LeaveSigInput(a16(t, x("collection")), a32(t, x("uid")), a32(t, x("at")))
		case "pair-code":
			got = PairChallengeSigInput(a32(t, x("p")), a32(t, x("ek")), a16(t, x("n")))
		default:
			t.Fatalf("unknown signed object type %q", v.Type)
		}
		eq(t, v.Type, got, v.Bytes)
	}
}

func TestVectorBackupInputs(t *testing.T) {
	for _, v := range loadVectors(t).BackupInputs {
		us, err := ParseBackupKey(v.Input)
		if v.OK != (err == nil) {
			t.Errorf("%q: ok %v, err %v", v.Input, v.OK, err)
			continue
		}
		if v.OK {
			eq(t, "backup secret", us[:], v.Secret)
		}
	}
}

func TestVectorPairReplies(t *testing.T) {
	for i, v := range loadVectors(t).PairReplies {
		ek, err := ecdh.X25519().NewPrivateKey(v.EKSecret)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "ek", ek.PublicKey().Bytes(), v.EK)
		id, err := OpenPairReply(ek, a32(t, v.UID), v.Sealed)
		if err != nil {
			t.Errorf("pair reply %d: %v", i, err)
			continue
		}
		eq(t, "user secret", id.Secret[:], v.UserSecret)
	}
}
