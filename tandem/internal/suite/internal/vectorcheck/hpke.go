package vectorcheck

import (
	"errors"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/curve25519"
)

// HPKE base mode, RFC 9180, for the one suite Tandem uses (§5.1):
// DHKEM(X25519, HKDF-SHA256) = 0x0020, HKDF-SHA256 = 0x0001,
// ChaCha20-Poly1305 = 0x0003. Only the receiver side is needed: the inbox
// and pairing-reply vectors are open-only.

var (
	kemSuiteID  = []byte{'K', 'E', 'M', 0x00, 0x20}
	hpkeSuiteID = []byte{'H', 'P', 'K', 'E', 0x00, 0x20, 0x00, 0x01, 0x00, 0x03}
)

func labeledExtract(suite, salt []byte, label string, ikm []byte) []byte {
	return hkdfExtract(salt, cat([]byte("HPKE-v1"), suite, []byte(label), ikm))
}

func labeledExpand(suite, prk []byte, label string, info []byte, l int) []byte {
	li := cat([]byte{byte(l >> 8), byte(l)}, []byte("HPKE-v1"), suite, []byte(label), info)
	return hkdfExpand(prk, li, l)
}

// hpkeOpen opens enc || ct sealed to the X25519 private scalar skR
// (RFC 9180 §4.1 Decap, §5.1 KeySchedule in mode_base, §5.2 Open with seq 0).
func hpkeOpen(skR, sealed, info, aad []byte) ([]byte, error) {
	if len(sealed) < 32+16 {
		return nil, errors.New("hpke: short")
	}
	enc, ct := sealed[:32], sealed[32:]
	dh, err := curve25519.X25519(clamp(skR), enc)
	if err != nil {
		return nil, err
	}
	pkR := x25519Pub(skR)
	eaePRK := labeledExtract(kemSuiteID, nil, "eae_prk", dh)
	shared := labeledExpand(kemSuiteID, eaePRK, "shared_secret", cat(enc, pkR), 32)

	pskIDHash := labeledExtract(hpkeSuiteID, nil, "psk_id_hash", nil)
	infoHash := labeledExtract(hpkeSuiteID, nil, "info_hash", info)
	ksc := cat([]byte{0x00}, pskIDHash, infoHash)
	secret := labeledExtract(hpkeSuiteID, shared, "secret", nil)
	key := labeledExpand(hpkeSuiteID, secret, "key", ksc, 32)
	nonce := labeledExpand(hpkeSuiteID, secret, "base_nonce", ksc, 12)

	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, err
	}
	return aead.Open(nil, nonce, ct, aad)
}
