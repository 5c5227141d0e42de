package suite

import (
	"crypto/ecdh"
	"crypto/hpke"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"
)

// Kind is an envelope kind (§5.4).
type Kind uint8

// The envelope kinds of §5.4. Others are reserved.
const (
	KindRecord  Kind = 1 // record state or inventory fragment, symmetric
	KindInbox   Kind = 2 // sealed inbox message, HPKE to the recipient's UKa
	KindRequest Kind = 3 // request or notice, symmetric
)

// Envelope constants (§5.4).
const (
	EnvelopeMagic   = "TNDM"
	EnvelopeVersion = 1
	// EnvelopeHeaderLen is magic (4) || version (1) || kind (1) || salt or kid (32).
	EnvelopeHeaderLen = 4 + 1 + 1 + 32
	// TagLen is the length of a channel tag: b32 of 20 bytes (§5.6).
	TagLen = 32
)

// Reasons an envelope fails to open. An *EnvelopeError matches ErrEnvelope
// and exactly one of these with errors.Is. Callers ignore
// ErrEnvelopeVersion silently (§15); docs/decisions/tandem-suite-envelope.md.
var (
	ErrEnvelopeShort   = errors.New("envelope too short")
	ErrEnvelopeMagic   = errors.New("wrong magic")
	ErrEnvelopeVersion = errors.New("unknown envelope version") // §15: ignore silently
	ErrEnvelopeKind    = errors.New("wrong or reserved kind")
	ErrEnvelopeKID     = errors.New("sealed to another agreement key")
	ErrEnvelopeAuth    = errors.New("authentication failed: wrong key or tag, or modified bytes")
	ErrBadTag          = errors.New("not a channel tag (32 characters a-z2-7)")
)

// EnvelopeError says why an envelope could not be sealed or opened.
type EnvelopeError struct {
	Reason error // one of the ErrEnvelope… values or ErrBadTag
	Detail string
}

func (e *EnvelopeError) Error() string {
	if e.Detail == "" {
		return ErrEnvelope.Error() + ": " + e.Reason.Error()
	}
	return ErrEnvelope.Error() + ": " + e.Reason.Error() + ": " + e.Detail
}

// Unwrap makes errors.Is match both ErrEnvelope and the reason.
func (e *EnvelopeError) Unwrap() []error { return []error{ErrEnvelope, e.Reason} }

func envErr(reason error, format string, args ...any) error {
	return &EnvelopeError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// ValidTag reports whether tag has the form of a channel tag: 32 characters
// of the lowercase base32 alphabet (§5.6).
func ValidTag(tag string) bool {
	if len(tag) != TagLen {
		return false
	}
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// envelopeAAD is "TNDM" || u8(1) || u8(kind) || tag, the tag as its 32 ASCII
// characters (§5.4, tandem-gaps.md).
func envelopeAAD(kind Kind, tag string) []byte {
	b := make([]byte, 0, 6+len(tag))
	b = append(b, EnvelopeMagic...)
	b = append(b, EnvelopeVersion, byte(kind))
	return append(b, tag...)
}

func symmetricKind(k Kind) bool { return k == KindRecord || k == KindRequest }

// messageKey is mk = KDF(K, salt, "tandem/v1/msg", 32) (§5.4).
func messageKey(key, salt [32]byte) [32]byte { return kdf32(key[:], salt[:], labelMsg) }

// SealEnvelope seals plaintext for a symmetric channel (kinds 1 and 3, §5.4)
// with channel key key and channel tag tag, drawing the 32-byte salt from
// rand (crypto/rand.Reader in production):
//
//	envelope   = "TNDM" || u8(1) || u8(kind) || salt (32) || ciphertext
//	mk         = KDF(K, salt, "tandem/v1/msg", 32)
//	ciphertext = ChaCha20-Poly1305-Seal(mk, 12 zero bytes, plaintext, "TNDM" || u8(1) || u8(kind) || tag)
func SealEnvelope(kind Kind, key [32]byte, tag string, plaintext []byte, rand io.Reader) ([]byte, error) {
	var salt [32]byte
	if _, err := io.ReadFull(rand, salt[:]); err != nil {
		return nil, fmt.Errorf("tandem/suite: envelope salt: %w", err)
	}
	return SealEnvelopeWithSalt(kind, key, salt, tag, plaintext)
}

// SealEnvelopeWithSalt is SealEnvelope with a given salt. The salt must be
// fresh and random for every message; this form exists for test vectors.
func SealEnvelopeWithSalt(kind Kind, key, salt [32]byte, tag string, plaintext []byte) ([]byte, error) {
	if !symmetricKind(kind) {
		return nil, envErr(ErrEnvelopeKind, "kind %d is not symmetric", kind)
	}
	if !ValidTag(tag) {
		return nil, envErr(ErrBadTag, "%q", tag)
	}
	mk := messageKey(key, salt)
	aead, err := chacha20poly1305.New(mk[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, EnvelopeHeaderLen+len(plaintext)+aead.Overhead())
	out = append(out, EnvelopeMagic...)
	out = append(out, EnvelopeVersion, byte(kind))
	out = append(out, salt[:]...)
	var nonce [chacha20poly1305.NonceSize]byte
	return aead.Seal(out, nonce[:], plaintext, envelopeAAD(kind, tag)), nil
}

// ParseEnvelopeHeader checks an envelope's magic and version and returns its
// kind and its salt (kinds 1, 3) or kid (kind 2). It fails with an
// *EnvelopeError: ErrEnvelopeShort, ErrEnvelopeMagic, ErrEnvelopeVersion or
// ErrEnvelopeKind (reserved kinds).
func ParseEnvelopeHeader(env []byte) (kind Kind, saltOrKID [32]byte, err error) {
	if len(env) < EnvelopeHeaderLen {
		return 0, saltOrKID, envErr(ErrEnvelopeShort, "%d bytes", len(env))
	}
	if string(env[:4]) != EnvelopeMagic {
		return 0, saltOrKID, envErr(ErrEnvelopeMagic, "%x", env[:4])
	}
	if env[4] != EnvelopeVersion {
		return 0, saltOrKID, envErr(ErrEnvelopeVersion, "version %d", env[4])
	}
	kind = Kind(env[5])
	if kind != KindRecord && kind != KindInbox && kind != KindRequest {
		return 0, saltOrKID, envErr(ErrEnvelopeKind, "kind %d", kind)
	}
	return kind, [32]byte(env[6:38]), nil
}

// OpenEnvelope opens a symmetric envelope (kind 1 or 3, §5.4) received on
// the channel with key key and tag tag, and returns its kind and plaintext.
// Any failure is an *EnvelopeError (errors.Is(err, ErrEnvelope)); a wrong
// key, a wrong tag and any modified byte all give ErrEnvelopeAuth.
func OpenEnvelope(key [32]byte, tag string, env []byte) (Kind, []byte, error) {
	if !ValidTag(tag) {
		return 0, nil, envErr(ErrBadTag, "%q", tag)
	}
	kind, salt, err := ParseEnvelopeHeader(env)
	if err != nil {
		return 0, nil, err
	}
	if !symmetricKind(kind) {
		return 0, nil, envErr(ErrEnvelopeKind, "kind %d on a symmetric channel", kind)
	}
	if len(env) < EnvelopeHeaderLen+chacha20poly1305.Overhead {
		return 0, nil, envErr(ErrEnvelopeShort, "%d bytes", len(env))
	}
	mk := messageKey(key, salt)
	aead, err := chacha20poly1305.New(mk[:])
	if err != nil {
		return 0, nil, err
	}
	var nonce [chacha20poly1305.NonceSize]byte
	pt, err := aead.Open(nil, nonce[:], env[EnvelopeHeaderLen:], envelopeAAD(kind, tag))
	if err != nil {
		return 0, nil, envErr(ErrEnvelopeAuth, "")
	}
	return kind, pt, nil
}

// HPKE suite of §5.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20-Poly1305.
func hpkeSuite() (hpke.KDF, hpke.AEAD) { return hpke.HKDFSHA256(), hpke.ChaCha20Poly1305() }

// hpkeSeal seals plaintext to the X25519 public key pub in HPKE base mode
// and returns enc || ct (§5.4 "HPKE wire format"). Randomness comes from
// crypto/rand inside crypto/hpke. The recipient's key is the X25519 key
// itself, never DeriveKeyPair's (docs/decisions/tandem-suite-hpke-keys.md).
func hpkeSeal(pub [32]byte, info, aad, plaintext []byte) ([]byte, error) {
	pk, err := ecdh.X25519().NewPublicKey(pub[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	hpk, err := hpke.NewDHKEMPublicKey(pk)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	kdf, aead := hpkeSuite()
	enc, s, err := hpke.NewSender(hpk, kdf, aead, info)
	if err != nil {
		return nil, fmt.Errorf("tandem/suite: HPKE seal: %w", err)
	}
	ct, err := s.Seal(aad, plaintext)
	if err != nil {
		return nil, fmt.Errorf("tandem/suite: HPKE seal: %w", err)
	}
	return append(enc, ct...), nil
}

// hpkeEncLen is the length of a DHKEM(X25519) encapsulated key.
const hpkeEncLen = 32

// hpkeOpen opens enc || ct with priv. Every failure is ErrEnvelopeAuth or
// ErrEnvelopeShort.
func hpkeOpen(priv *ecdh.PrivateKey, info, aad, sealed []byte) ([]byte, error) {
	if len(sealed) < hpkeEncLen+chacha20poly1305.Overhead {
		return nil, envErr(ErrEnvelopeShort, "HPKE payload of %d bytes", len(sealed))
	}
	hk, err := hpke.NewDHKEMPrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	kdf, aead := hpkeSuite()
	r, err := hpke.NewRecipient(sealed[:hpkeEncLen], hk, kdf, aead, info)
	if err != nil { // e.g. enc is a low-order point
		return nil, envErr(ErrEnvelopeAuth, "HPKE: %v", err)
	}
	pt, err := r.Open(aad, sealed[hpkeEncLen:])
	if err != nil {
		return nil, envErr(ErrEnvelopeAuth, "")
	}
	return pt, nil
}

// SealInbox seals plaintext as a kind-2 envelope (§5.4) to the recipient
// whose agreement public key is uka, for the inbox channel tag tag:
//
//	envelope = "TNDM" || u8(1) || u8(2) || kid (32) || enc (32) || ct
//	kid      = H("tandem/v1/kid" || uka)
//	enc||ct  = HPKE base mode to uka, info "tandem/v1/inbox",
//	           aad "TNDM" || u8(1) || u8(2) || tag
func SealInbox(uka [32]byte, tag string, plaintext []byte) ([]byte, error) {
	if !ValidTag(tag) {
		return nil, envErr(ErrBadTag, "%q", tag)
	}
	kid := KID(uka)
	sealed, err := hpkeSeal(uka, []byte(labelInboxInfo), envelopeAAD(KindInbox, tag), plaintext)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, EnvelopeHeaderLen+len(sealed))
	out = append(out, EnvelopeMagic...)
	out = append(out, EnvelopeVersion, byte(KindInbox))
	out = append(out, kid[:]...)
	return append(out, sealed...), nil
}

// OpenInbox opens a kind-2 envelope (§5.4) addressed to id on the inbox
// channel tag tag. Failures are *EnvelopeError values; an envelope whose kid
// is not id.KID gives ErrEnvelopeKID.
func OpenInbox(id *Identity, tag string, env []byte) ([]byte, error) {
	if !ValidTag(tag) {
		return nil, envErr(ErrBadTag, "%q", tag)
	}
	kind, kid, err := ParseEnvelopeHeader(env)
	if err != nil {
		return nil, err
	}
	if kind != KindInbox {
		return nil, envErr(ErrEnvelopeKind, "kind %d on the inbox", kind)
	}
	if kid != id.KID {
		return nil, envErr(ErrEnvelopeKID, "kid %x", kid[:8])
	}
	return hpkeOpen(id.AgreeKey, []byte(labelInboxInfo), envelopeAAD(KindInbox, tag), env[EnvelopeHeaderLen:])
}
