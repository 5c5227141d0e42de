package suite

import (
	"crypto/ed25519"
	"encoding/hex"
	"math/big"
	"testing"

	"filippo.io/edwards25519"
)

var fieldP = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))

// canonicalRef is canonicalPoint written with big integers: y < p, and no
// sign bit on x = 0 (y = 1 or y = p - 1).
func canonicalRef(b []byte) bool {
	le := reverse(b)
	sign := le[0]&0x80 != 0
	le[0] &= 0x7f
	y := new(big.Int).SetBytes(le)
	if y.Cmp(fieldP) >= 0 {
		return false
	}
	pm1 := new(big.Int).Sub(fieldP, big.NewInt(1))
	if sign && (y.Cmp(big.NewInt(1)) == 0 || y.Cmp(pm1) == 0) {
		return false
	}
	return true
}

func TestCanonicalPoint(t *testing.T) {
	var cases [][]byte
	// Every encoding near the boundaries, with and without the sign bit.
	for _, y := range []int64{0, 1, 2, 18, 19, 20} {
		for _, base := range []*big.Int{big.NewInt(0), new(big.Int).Sub(fieldP, big.NewInt(20))} {
			v := new(big.Int).Add(base, big.NewInt(y))
			if v.BitLen() > 255 {
				continue
			}
			b := reverse(v.FillBytes(make([]byte, 32)))
			cases = append(cases, b, append(b[:31:31], b[31]|0x80))
		}
	}
	for i := range 256 {
		s := seed("canon", i, "")
		cases = append(cases, s[:])
	}
	for _, b := range cases {
		if got, want := canonicalPoint(b), canonicalRef(b); got != want {
			t.Errorf("%x: canonicalPoint %v, want %v", b, got, want)
		}
	}
}

func TestVerifyStrictAgainstStdlib(t *testing.T) {
	// For ordinary keys and signatures both verifiers agree, including on
	// every single-bit change of message, key and signature.
	n := 8
	if testing.Short() {
		n = 2
	}
	for i := range n {
		sd := seed("verify", i, "seed")
		priv := ed25519.NewKeyFromSeed(sd[:])
		pub := priv.Public().(ed25519.PublicKey)
		msg := sd[:i]
		sig := ed25519.Sign(priv, msg)
		if !VerifyStrict(pub, msg, sig) {
			t.Fatal("valid signature rejected")
		}
		var keys Keys // remembers pub from the first check on
		if !keys.VerifyStrict(pub, msg, sig) {
			t.Fatal("valid signature rejected with Keys")
		}
		for bit := range 8 * 64 {
			s := append([]byte(nil), sig...)
			s[bit/8] ^= 1 << (bit % 8)
			if VerifyStrict(pub, msg, s) != ed25519.Verify(pub, msg, s) {
				t.Fatalf("disagreement on sig bit %d", bit)
			}
			if keys.VerifyStrict(pub, msg, s) != VerifyStrict(pub, msg, s) {
				t.Fatalf("Keys disagrees on sig bit %d", bit)
			}
		}
		for bit := range 8 * 32 {
			p := append([]byte(nil), pub...)
			p[bit/8] ^= 1 << (bit % 8)
			if VerifyStrict(p, msg, sig) || keys.VerifyStrict(p, msg, sig) {
				t.Fatalf("accepted under a modified key (bit %d)", bit)
			}
		}
	}
	var keys Keys
	if VerifyStrict(nil, nil, nil) || VerifyStrict(make([]byte, 32), nil, make([]byte, 63)) ||
		keys.VerifyStrict(nil, nil, nil) || keys.VerifyStrict(make([]byte, 32), nil, make([]byte, 63)) {
		t.Fatal("accepted wrong lengths")
	}
}

// TestKeysBounded: a flood of distinct authors costs Keys at most keysHeld
// remembered keys, refused keys are not remembered, and a key forgotten
// when it was full still verifies.
func TestKeysBounded(t *testing.T) {
	var keys Keys
	msg := []byte("m")
	first := ed25519.NewKeyFromSeed(make([]byte, 32))
	firstSig := ed25519.Sign(first, msg)
	for i := range keysHeld + 10 {
		sd := seed("keys", i, "ed")
		priv := ed25519.NewKeyFromSeed(sd[:])
		if !keys.VerifyStrict(priv.Public().(ed25519.PublicKey), msg, ed25519.Sign(priv, msg)) {
			t.Fatalf("key %d: valid signature rejected", i)
		}
		if len(keys.m) > keysHeld {
			t.Fatalf("Keys holds %d keys, more than %d", len(keys.m), keysHeld)
		}
	}
	if !keys.VerifyStrict(first.Public().(ed25519.PublicKey), msg, firstSig) {
		t.Fatal("a forgotten key no longer verifies")
	}
	n := len(keys.m)
	bad := make([]byte, 32) // y = 0 is a point of small order... or none: refused either way
	if keys.VerifyStrict(bad, msg, firstSig) || len(keys.m) != n {
		t.Fatalf("a refused key was accepted or remembered (%d keys, was %d)", len(keys.m), n)
	}
}

// TestSmallOrderKeysRejected checks all eight small-order points, in every
// encoding that decodes, as public keys.
func TestSmallOrderKeysRejected(t *testing.T) {
	T := mustPoint(order8)
	P := edwards25519.NewIdentityPoint()
	for i := range 8 {
		enc := P.Bytes()
		R := edwards25519.NewGeneratorPoint().Bytes()
		sig := append(append([]byte(nil), R...), make([]byte, 32)...)
		if VerifyStrict(enc, nil, sig) {
			t.Errorf("small-order key %d (%s) accepted", i, hex.EncodeToString(enc))
		}
		if !smallOrder(P) {
			t.Errorf("point %d not detected as small order", i)
		}
		P.Add(P, T)
	}
}

func FuzzVerifyStrict(f *testing.F) {
	sd := seed("fuzz", 0, "ed")
	priv := ed25519.NewKeyFromSeed(sd[:])
	msg := []byte("m")
	f.Add([]byte(priv.Public().(ed25519.PublicKey)), msg, ed25519.Sign(priv, msg))
	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		// Strict acceptance implies the standard library's acceptance.
		strict := VerifyStrict(pub, msg, sig)
		if strict && !ed25519.Verify(ed25519.PublicKey(pub), msg, sig) {
			t.Fatal("VerifyStrict accepted what crypto/ed25519 rejects")
		}
		// Remembering a key changes nothing: once primed with pub, and
		// from cold.
		var keys Keys
		keys.VerifyStrict(pub, nil, make([]byte, 64))
		if keys.VerifyStrict(pub, msg, sig) != strict || new(Keys).VerifyStrict(pub, msg, sig) != strict {
			t.Fatal("Keys.VerifyStrict disagrees with VerifyStrict")
		}
	})
}
