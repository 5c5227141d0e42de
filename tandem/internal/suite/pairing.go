package suite

import (
	"crypto/ecdh"
	"encoding/binary"
	"fmt"
)

// PairCode is the six-digit pairing code of §6.3 step 3 (tandem-gaps.md):
//
//	u32(H("tandem/v1/pair-code" || P || ek || n)[0..4]) mod 1000000
//
// as six decimal digits with leading zeros. ek is the new device's one-time
// X25519 public key and n the 16-byte challenge nonce.
func PairCode(p, ek [32]byte, n [16]byte) string {
	h := H([]byte(labelPairCode), p[:], ek[:], n[:])
	return fmt.Sprintf("%06d", binary.BigEndian.Uint32(h[:4])%1000000)
}

// pairReplyAAD is "TANDEM-PAIR-V1" || uid || ek (§6.3 step 4).
func pairReplyAAD(uid, ek [32]byte) []byte {
	b := make([]byte, 0, len(prefixPairReply)+64)
	b = append(b, prefixPairReply...)
	b = append(b, uid[:]...)
	return append(b, ek[:]...)
}

// SealPairReply seals the user secret US to the new device's one-time key ek
// (§6.3 step 4): HPKE base mode to ek, info "tandem/v1/pair",
// aad "TANDEM-PAIR-V1" || uid || ek, plaintext the 32 bytes of US; the
// result is enc (32) || ct. See docs/decisions/tandem-suite-pair-reply.md.
func SealPairReply(id *Identity, ek [32]byte) ([]byte, error) {
	return hpkeSeal(ek, []byte(labelPairInfo), pairReplyAAD(id.UID, ek), id.Secret[:])
}

// OpenPairReply opens a pairing reply with the one-time private key whose
// public half is ek, and checks that the secret inside gives uid, the user
// ID from the pairing QR code (§6.3 step 5). Failures are *EnvelopeError
// values (ErrEnvelopeAuth, ErrEnvelopeShort) or ErrBadKey when the secret
// belongs to another user or is not 32 bytes.
func OpenPairReply(ekPriv *ecdh.PrivateKey, uid [32]byte, sealed []byte) (*Identity, error) {
	ek := [32]byte(ekPriv.PublicKey().Bytes())
	pt, err := hpkeOpen(ekPriv, []byte(labelPairInfo), pairReplyAAD(uid, ek), sealed)
	if err != nil {
		return nil, err
	}
	if len(pt) != 32 {
		return nil, fmt.Errorf("%w: pairing reply holds %d bytes, not a user secret", ErrBadKey, len(pt))
	}
	id := NewIdentity([32]byte(pt))
	if id.UID != uid {
		return nil, fmt.Errorf("%w: pairing reply holds the secret of another user", ErrBadKey)
	}
	return id, nil
}
