package suite

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"os"
	"testing"
	"testing/cryptotest"

	"filippo.io/edwards25519"
)

// Regenerate testdata/vectors/tandem-v1.json with
//
//	go test ./tandem/suite -run TestGenerateVectors -genvectors
//
// Published vectors never change to match the code: run this only to add
// vectors, review the diff, and never to "fix" a failing conformance test.
var genVectors = flag.Bool("genvectors", false, "rewrite testdata/vectors/tandem-v1.json")

const vectorPath = "../../../testdata/vectors/tandem-v1.json"

// seed derives a fixed 32-byte input for a vector from its section, index
// and purpose.
func seed(section string, i int, label string) [32]byte {
	return H([]byte("ferry tandem-v1 vectors"), []byte(section), binary.BigEndian.AppendUint32(nil, uint32(i)), []byte(label))
}

func seed16(section string, i int, label string) [16]byte {
	s := seed(section, i, label)
	return [16]byte(s[:16])
}

func TestGenerateVectors(t *testing.T) {
	if !*genVectors {
		t.Skip("run with -genvectors to rewrite the published vectors")
	}
	cryptotest.SetGlobalRandom(t, 2026)
	f := vectorFile{Description: "Tandem suite v1 conformance vectors (tandem.txt §5, §6.3, §7.3, §8.3; tandem-gaps.md). Bytes are lowercase hex. See docs/vectors.md."}
	f.Users = genUsers()
	f.NamedRecords = genNamed()
	f.Commitments = genCommit()
	f.CollectionTags = genCollTags()
	f.Invites = genInvites()
	f.Pairings = genPairings()
	f.Envelopes = genEnvelopes(t)
	f.Inbox = genInbox(t)
	f.Writes = genWrites(t)
	f.Inventories = genInventories(t)
	f.Ed25519 = genEd25519(t)
	f.SignedObjects = genSigned()
	f.BackupInputs = genBackupInputs()
	f.PairReplies = genPairReplies(t)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(vectorPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ffSecret() [32]byte {
	var s [32]byte
	for i := range s {
		s[i] = 0xff
	}
	return s
}

func genUsers() []userVec {
	secrets := [][32]byte{{}, ffSecret(), seed("users", 2, "secret"), seed("users", 3, "secret")}
	var out []userVec
	for _, us := range secrets {
		id := NewIdentity(us)
		out = append(out, userVec{
			Secret: us[:], UID: id.UID[:], UKa: id.UKa[:], HomeKey: id.HomeKey[:],
			HomeTag: id.HomeTag, InboxTag: id.InboxTag, HomeScope: id.HomeScope[:],
			KID: id.KID[:], BackupKey: BackupKey(us),
		})
	}
	return out
}

func genNamed() []namedVec {
	coll := seed16("named", 4, "collection")
	names := []string{"_roster", "_meta", "", "settings:liszto", "membership:" + B32(coll[:]),
		"caf\u00e9", "cafe\u0301", "Liste 📋 ünïcødé"}
	var out []namedVec
	for _, n := range names {
		id := NamedRecordID(n)
		out = append(out, namedVec{Name: n, ID: id[:]})
	}
	return out
}

func genCommit() []commitVec {
	keys := [][32]byte{{}, seed("commitments", 1, "key"), seed("commitments", 2, "key")}
	var out []commitVec
	for _, k := range keys {
		c := Commit(k)
		out = append(out, commitVec{Key: k[:], Commit: c[:]})
	}
	return out
}

func genCollTags() []collTagVec {
	var out []collTagVec
	for i := range 3 {
		k, e := seed("collection_tags", i, "key"), seed("collection_tags", i, "epoch")
		if i == 0 {
			e = [32]byte{}
		}
		out = append(out, collTagVec{Key: k[:], Epoch: e[:], Tag: CollectionTag(k, e)})
	}
	return out
}

func genInvites() []inviteVec {
	var out []inviteVec
	for i := range 3 {
		inv := NewInvite(seed("invites", i, "secret"))
		out = append(out, inviteVec{Secret: inv.Secret[:], SignPub: inv.SignPub[:], ChannelKey: inv.ChannelKey[:], Tag: inv.Tag})
	}
	return out
}

func genPairings() []pairingVec {
	var out []pairingVec
	leadingZero := false
	for i := 0; len(out) < 3 || !leadingZero; i++ {
		p, ekSeed, n := seed("pairings", i, "p"), seed("pairings", i, "ek"), seed16("pairings", i, "n")
		ekPriv, _ := ecdh.X25519().NewPrivateKey(ekSeed[:])
		ek := [32]byte(ekPriv.PublicKey().Bytes())
		code := PairCode(p, ek, n)
		if len(out) >= 3 && code[0] != '0' {
			continue
		}
		leadingZero = leadingZero || code[0] == '0'
		pr := NewPairing(p)
		out = append(out, pairingVec{P: p[:], Key: pr.Key[:], Tag: pr.Tag, EK: ek[:], N: n[:], Code: code})
	}
	return out
}

func genEnvelopes(t *testing.T) []envelopeVec {
	home := NewIdentity(seed("users", 2, "secret"))
	ck := seed("collection_tags", 1, "key")
	ctag := CollectionTag(ck, seed("collection_tags", 1, "epoch"))
	inv := NewInvite(seed("invites", 0, "secret"))
	pr := NewPairing(seed("pairings", 0, "p"))
	cases := []struct {
		kind Kind
		key  [32]byte
		tag  string
		pt   string
	}{
		{KindRecord, ck, ctag, `{"rec":"AAECAwQFBgcICQoLDA0ODw","writes":[]}`},
		{KindRecord, home.HomeKey, home.HomeTag, ""},
		{KindRequest, inv.ChannelKey, inv.Tag, `{"uid":"x","name":"Aimée 👋"}`},
		{KindRequest, pr.Key, pr.Tag, `{"name":"iPad","ek":"AAAA"}`},
	}
	var out []envelopeVec
	for i, c := range cases {
		salt := seed("envelopes", i, "salt")
		env, err := SealEnvelopeWithSalt(c.kind, c.key, salt, c.tag, []byte(c.pt))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, envelopeVec{Kind: uint8(c.kind), Key: c.key[:], Salt: salt[:], Tag: c.tag, Plaintext: []byte(c.pt), Envelope: env})
	}
	return out
}

func genInbox(t *testing.T) []inboxVec {
	pts := []string{`{"type":"grant","c":"..."}`, "", `{"type":"declined","c":"AAECAwQFBgcICQoLDA0ODw","i":"ZZZ","note":"ü"}`}
	var out []inboxVec
	for i, pt := range pts {
		us := seed("inbox", i, "recipient")
		id := NewIdentity(us)
		env, err := SealInbox(id.UKa, id.InboxTag, []byte(pt))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, inboxVec{RecipientSecret: us[:], Tag: id.InboxTag, Plaintext: []byte(pt), Envelope: env})
	}
	return out
}

func vvEntries(v VV) []vvEntry {
	out := []vvEntry{}
	for _, d := range v {
		out = append(out, vvEntry{Device: append([]byte(nil), d.Device[:]...), Millis: d.HLC.Millis, Counter: d.HLC.Counter})
	}
	return out
}

func dev(i int) DeviceID {
	s := seed("devices", i, "device")
	return DeviceID(s[:8])
}

func genWrites(t *testing.T) []writeVec {
	u0, u1 := seed("users", 2, "secret"), seed("users", 3, "secret")
	id0 := NewIdentity(u0)
	coll := seed16("writes", 0, "collection")
	several := VV{{dev(1), HLC{1731311999000, 2}}, {dev(2), HLC{1731300000000, 0}}, {dev(3), HLC{MaxHLCMillis, 65535}}}
	sortVV(several)
	type wcase struct {
		secret [32]byte
		w      WriteBody
	}
	cases := []wcase{
		{u0, WriteBody{Scope: coll, Record: seed16("writes", 0, "record"), Field: "title", Op: OpAssign,
			Value: []byte(`"Groceries"`), Dot: Dot{dev(0), HLC{1731312000123, 0}}, Ref: seed("writes", 0, "ref")}},
		{u0, WriteBody{Scope: coll, Record: seed16("writes", 1, "record"), Field: "tïtle ✓ 名前", Op: OpAssign,
			Value: []byte("v"), Dot: Dot{dev(0), HLC{1731312000124, 7}}, Ref: seed("writes", 1, "ref"), Context: several, Base: several[:1]}},
		{u1, WriteBody{Scope: coll, Record: seed16("writes", 2, "record"), Field: "", Op: OpAdd,
			Element: []byte{}, Value: nil, Dot: Dot{dev(4), HLC{0, 0}}, Ref: seed("writes", 2, "ref"), Base: several}},
		{u1, WriteBody{Scope: coll, Record: seed16("writes", 3, "record"), Field: "tags", Op: OpRemove,
			Element: []byte("urgent"), Dot: Dot{dev(4), HLC{1731312000000, 65535}}, Ref: seed("writes", 3, "ref"), Context: several[1:]}},
		{u0, WriteBody{Scope: id0.HomeScope, Record: NamedRecordID("settings:liszto"), Field: "cafe\u0301", Op: OpDelete,
			Dot: Dot{dev(0), HLC{MaxHLCMillis, 1}}}},
		{u0, WriteBody{Record: seed16("writes", 5, "genesis"), Field: "s", Op: OpAssign,
			Value: []byte(`{"n":0,"members":[]}`), Dot: Dot{dev(0), HLC{1731312000000, 0}}}},
	}
	var out []writeVec
	for _, c := range cases {
		id := NewIdentity(c.secret)
		w := c.w
		w.Author = id.UID
		si, wid, sig, err := SignWrite(id.SignKey, &w)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, writeVec{AuthorSecret: c.secret[:], Scope: w.Scope[:], Record: w.Record[:], Field: w.Field,
			Op: uint8(w.Op), Element: nz(w.Element), Value: nz(w.Value), Device: w.Dot.Device[:], Millis: w.Dot.HLC.Millis,
			Counter: w.Dot.HLC.Counter, Ref: w.Ref[:], Context: vvEntries(w.Context), Base: vvEntries(w.Base),
			SigInput: si, WriteID: wid[:], Sig: sig})
	}
	return out
}

func nz(b []byte) hexBytes {
	if b == nil {
		return hexBytes{}
	}
	return b
}

func sortVV(v VV) {
	for i := range v {
		for j := i + 1; j < len(v); j++ {
			if v[j].Device.Compare(v[i].Device) < 0 {
				v[i], v[j] = v[j], v[i]
			}
		}
	}
}

func genInventories(t *testing.T) []inventoryVec {
	w := func(i int) [32]byte { return seed("inventories", i, "write") }
	r := func(i int) [16]byte { return seed16("inventories", i, "record") }
	sets := [][]InventoryEntry{
		{},
		{{Record: r(0), Writes: [][32]byte{w(0)}}},
		{{Record: r(1), Writes: [][32]byte{w(1), w(2), w(3)}}, {Record: r(2), Writes: [][32]byte{w(4)}}, {Record: NamedRecordID("_meta"), Writes: [][32]byte{w(5), w(6)}}},
	}
	var out []inventoryVec
	for _, set := range sets {
		b, err := EncodeInventory(set)
		if err != nil {
			t.Fatal(err)
		}
		// List records and writes in canonical order, as the bytes hold them.
		dec, err := DecodeInventory(b)
		if err != nil {
			t.Fatal(err)
		}
		recs := []inventoryRecordVec{}
		for _, e := range dec {
			ws := []hexBytes{}
			for _, x := range e.Writes {
				ws = append(ws, append([]byte(nil), x[:]...))
			}
			recs = append(recs, inventoryRecordVec{ID: append([]byte(nil), e.Record[:]...), Writes: ws})
		}
		h := InventoryHash(b)
		out = append(out, inventoryVec{Records: recs, Bytes: b, Hash: h[:]})
	}
	return out
}

func genSigned() []signedObjVec {
	u := NewIdentity(seed("users", 2, "secret"))
	c, i := seed16("signed", 0, "collection"), seed16("signed", 0, "invite")
	at, ep, k, have := seed("signed", 0, "at"), seed("signed", 0, "epoch"), seed("signed", 0, "key"), seed("signed", 0, "have")
	p, ek, n := seed("signed", 0, "p"), seed("signed", 0, "ek"), seed16("signed", 0, "n")
	x := func(b []byte) string { return hex.EncodeToString(b) }
	return []signedObjVec{
		{"join", map[string]string{"collection": x(c[:]), "invite": x(i[:]), "uid": x(u.UID[:]), "uka": x(u.UKa[:]), "name": "Aimée"},
			JoinSigInput(c, i, u.UID, u.UKa, "Aimée")},
		{"join", map[string]string{"collection": x(c[:]), "invite": x(i[:]), "uid": x(u.UID[:]), "uka": x(u.UKa[:]), "name": ""},
			JoinSigInput(c, i, u.UID, u.UKa, "")},
		{"invite", map[string]string{"collection": x(c[:]), "invite": x(i[:]), "uid": x(u.UID[:])}, InviteSigInput(c, i, u.UID)},
		{"grant", map[string]string{"recipient": x(u.UID[:]), "collection": x(c[:]), "at": x(at[:]), "epoch": x(ep[:]), "key": x(k[:])},
			GrantSigInput(u.UID, c, at, ep, k)},
		{"keyreq", map[string]string{"collection": x(c[:]), "have": x(have[:]), "uid": x(u.UID[:])}, KeyReqSigInput(c, have, u.UID)},
		{"leave", map[string]string{"collection": x(c[:]), "uid": x(u.UID[:]), "at": x(at[:])}, LeaveSigInput(c, u.UID, at)},
		{"pair-code", map[string]string{"p": x(p[:]), "ek": x(ek[:]), "n": x(n[:])}, PairChallengeSigInput(p, ek, n)},
	}
}

func genBackupInputs() []backupVec {
	a, b := seed("backup", 0, "secret"), seed("backup", 1, "secret")
	ka := BackupKey(a)
	typo := []byte(ka)
	if typo[10] == 'a' {
		typo[10] = 'b'
	} else {
		typo[10] = 'a'
	}
	return []backupVec{
		{Input: ka, OK: true, Secret: a[:]},
		{Input: FormatBackupKey(b), OK: true, Secret: b[:]},
		{Input: upperDashed(BackupKey(b)), OK: true, Secret: b[:]},
		{Input: string(typo), OK: false},
		{Input: ka[:52], OK: false},
		{Input: ka[:55] + "1", OK: false},
	}
}

func upperDashed(k string) string {
	var out []byte
	for i := 0; i < len(k); i++ {
		if i > 0 && i%4 == 0 {
			out = append(out, '-')
		}
		c := k[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

func genPairReplies(t *testing.T) []pairReplyVec {
	var out []pairReplyVec
	for i := range 3 {
		user := NewIdentity(seed("pair_replies", i, "user"))
		ekSecret := seed("pair_replies", i, "ek")
		ekPriv, err := ecdh.X25519().NewPrivateKey(ekSecret[:])
		if err != nil {
			t.Fatal(err)
		}
		ek := [32]byte(ekPriv.PublicKey().Bytes())
		sealed, err := SealPairReply(user, ek)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pairReplyVec{EKSecret: ekSecret[:], EK: ek[:], UID: user.UID[:], Sealed: sealed, UserSecret: user.Secret[:]})
	}
	return out
}

// --- Ed25519 edge cases (docs/vectors.md explains each construction) ---

// order8 is a point of order 8 (canonical encoding).
var order8 = mustHex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func mustPoint(b []byte) *edwards25519.Point {
	p, err := new(edwards25519.Point).SetBytes(b)
	if err != nil {
		panic(err)
	}
	return p
}

// edKey returns the secret scalar a and public key of an Ed25519 seed.
func edKey(seed []byte) (*edwards25519.Scalar, []byte) {
	h := sha512.Sum512(seed)
	a, _ := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	return a, new(edwards25519.Point).ScalarBaseMult(a).Bytes()
}

func edChallenge(r, a, m []byte) *edwards25519.Scalar {
	h := sha512.New()
	h.Write(r)
	h.Write(a)
	h.Write(m)
	k, _ := edwards25519.NewScalar().SetUniformBytes(h.Sum(nil))
	return k
}

func scalarFrom(s [32]byte) *edwards25519.Scalar {
	var wide [64]byte
	copy(wide[:], s[:])
	x, _ := edwards25519.NewScalar().SetUniformBytes(wide[:])
	return x
}

// kDivisibleBy8 reports whether the challenge scalar k is ≡ 0 mod 8, so
// that [k]T vanishes for any T of order dividing 8.
func kDivisibleBy8(k *edwards25519.Scalar) bool { return k.Bytes()[0]&7 == 0 }

func sigBytes(r []byte, s *edwards25519.Scalar) []byte {
	return append(append([]byte(nil), r...), s.Bytes()...)
}

// identityNonCanonical is the identity (y = 1) encoded as y = p + 1.
var identityNonCanonical = mustHex("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")

// identitySignBit is the identity with the x sign bit set.
var identitySignBit = mustHex("0100000000000000000000000000000000000000000000000000000000000080")

var identity = mustHex("0100000000000000000000000000000000000000000000000000000000000000")

func genEd25519(t *testing.T) []edVec {
	var out []edVec
	add := func(comment string, pub, msg, sig []byte, valid bool) {
		if got := VerifyStrict(pub, msg, sig); got != valid {
			t.Fatalf("%s: VerifyStrict = %v, constructed as %v", comment, got, valid)
		}
		std := ed25519.Verify(ed25519.PublicKey(pub), msg, sig)
		comment = fmt.Sprintf("%s (crypto/ed25519.Verify says %v)", comment, std)
		out = append(out, edVec{Comment: comment, Pub: pub, Msg: nz(msg), Sig: sig, Valid: valid})
	}
	sd := seed("ed25519", 0, "seed")
	priv := ed25519.NewKeyFromSeed(sd[:])
	a, pub := edKey(sd[:])
	if !bytes.Equal(pub, priv.Public().(ed25519.PublicKey)) {
		t.Fatal("edKey disagrees with crypto/ed25519")
	}
	msg := []byte("tandem")

	// 1-2. Ordinary signatures, empty and short message.
	add("ordinary signature, empty message", pub, nil, ed25519.Sign(priv, nil), true)
	sig := ed25519.Sign(priv, msg)
	add("ordinary signature", pub, msg, sig, true)

	// 3. Wrong message.
	add("ordinary signature over another message", pub, []byte("tandem!"), sig, false)

	// 4. S ≥ L: S + L encodes the same scalar mod L.
	s := new(big.Int).SetBytes(reverse(sig[32:]))
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	s.Add(s, l)
	sBig := reverse(s.FillBytes(make([]byte, 32)))
	add("S + L (S not below the group order)", pub, msg, append(append([]byte(nil), sig[:32]...), sBig...), false)

	// 5. Valid with small-order R: R = identity, S = k·a.
	k := edChallenge(identity, pub, msg)
	add("R is the identity, a small-order point; S = k·a satisfies [S]B = R + [k]A", pub, msg,
		sigBytes(identity, new(edwards25519.Scalar).Multiply(k, a)), true)

	// 6-7. Non-canonical R: the identity encoded as y = p+1, and with the sign bit set.
	for _, r := range [][]byte{identityNonCanonical, identitySignBit} {
		k := edChallenge(r, pub, msg)
		add(fmt.Sprintf("non-canonical R %x (the identity); S = k·a satisfies the equation for the decoded point", r[:2]),
			pub, msg, sigBytes(r, new(edwards25519.Scalar).Multiply(k, a)), false)
	}

	// 8. Mixed-order R = [r]B + T8: only the cofactored equation holds.
	r := scalarFrom(seed("ed25519", 8, "r"))
	R := new(edwards25519.Point).Add(new(edwards25519.Point).ScalarBaseMult(r), mustPoint(order8)).Bytes()
	k = edChallenge(R, pub, msg)
	add("R = [r]B + T (T of order 8), S = r + k·a: passes only the cofactored equation", pub, msg,
		sigBytes(R, new(edwards25519.Scalar).MultiplyAdd(k, a, r)), false)

	// 9-10. Small-order A (identity, then an order-8 point): R = [s]B, S = s,
	// with k ≡ 0 mod 8 for the order-8 point, satisfy the equation.
	for i, A := range [][]byte{identity, order8} {
		for j := 0; ; j++ {
			sc := scalarFrom(seed("ed25519", 100*i+j, "small-A"))
			R := new(edwards25519.Point).ScalarBaseMult(sc).Bytes()
			if kDivisibleBy8(edChallenge(R, A, msg)) || i == 0 {
				add(fmt.Sprintf("small-order public key %x…; R = [s]B, S = s satisfy the equation", A[:4]), A, msg, sigBytes(R, sc), false)
				break
			}
		}
	}

	// 11. Non-canonical A: the identity encoded as y = p+1.
	sc := scalarFrom(seed("ed25519", 11, "s"))
	R = new(edwards25519.Point).ScalarBaseMult(sc).Bytes()
	add("non-canonical public key (the identity as y = p+1); R = [s]B, S = s satisfy the equation", identityNonCanonical, msg, sigBytes(R, sc), false)

	// 12. Non-canonical A of large order: y = p + y0 for a small y0 on the curve.
	for y0 := byte(2); y0 < 19; y0++ {
		enc := make([]byte, 32)
		enc[0] = y0
		P, err := new(edwards25519.Point).SetBytes(enc)
		if err != nil || smallOrder(P) {
			continue
		}
		nc := new(big.Int).SetBytes(reverse(enc))
		nc.Add(nc, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19)))
		add(fmt.Sprintf("non-canonical public key y = p + %d (a point of large order), ordinary signature bytes", y0),
			reverse(nc.FillBytes(make([]byte, 32))), msg, sig, false)
		break
	}

	// 13. Mixed-order A = [a]B + T8 is not small order: allowed; with k ≡ 0
	// mod 8 the signature R = [r]B, S = r + k·a verifies.
	Amixed := new(edwards25519.Point).Add(new(edwards25519.Point).ScalarBaseMult(a), mustPoint(order8)).Bytes()
	for j := 0; ; j++ {
		r := scalarFrom(seed("ed25519", 1300+j, "r"))
		R := new(edwards25519.Point).ScalarBaseMult(r).Bytes()
		k := edChallenge(R, Amixed, msg)
		if kDivisibleBy8(k) {
			add("mixed-order public key [a]B + T (T of order 8), k ≡ 0 mod 8: valid, only small-order keys are rejected",
				Amixed, msg, sigBytes(R, new(edwards25519.Scalar).MultiplyAdd(k, a, r)), true)
			break
		}
	}
	return out
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}
