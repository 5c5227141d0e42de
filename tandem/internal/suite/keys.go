package suite

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"fmt"
)

// KDF labels of §5.3, §5.6, §6.2, §7.3 and §5.7.
const (
	labelUserSign    = "tandem/v1/user-sign"
	labelUserAgree   = "tandem/v1/user-agree"
	labelHome        = "tandem/v1/home"
	labelTag         = "tandem/v1/tag"
	labelInboxTag    = "tandem/v1/inbox-tag"
	labelCollTag     = "tandem/v1/collection-tag"
	labelInviteSign  = "tandem/v1/invite-sign"
	labelInviteKey   = "tandem/v1/invite-key"
	labelPairKey     = "tandem/v1/pair-key"
	labelKID         = "tandem/v1/kid"
	labelNamed       = "tandem/v1/named"
	labelCommit      = "tandem/v1/commit"
	labelHomeScope   = "tandem/v1/home"
	labelPairCode    = "tandem/v1/pair-code"
	labelMsg         = "tandem/v1/msg"
	labelInboxInfo   = "tandem/v1/inbox"
	labelPairInfo    = "tandem/v1/pair"
	prefixPairReply  = "TANDEM-PAIR-V1"
	prefixJoin       = "TANDEM-JOIN-V1"
	prefixInvite     = "TANDEM-INVITE-V1"
	prefixGrant      = "TANDEM-GRANT-V1"
	prefixKeyReq     = "TANDEM-KEYREQ-V1"
	prefixLeave      = "TANDEM-LEAVE-V1"
	prefixPairCodeSg = "TANDEM-PAIR-CODE-V1"
	prefixPairNoSg   = "TANDEM-PAIR-DECLINE-V1" // docs/decisions/tandem-pairing-refusal.md
)

// Identity holds everything derived from a user secret US (§5.3, §5.6,
// §6.2). It is immutable once made; treat its fields as read-only.
type Identity struct {
	Secret [32]byte // US

	SignKey ed25519.PrivateKey // UKs = KDF(US, "", "tandem/v1/user-sign", 32) as an Ed25519 seed
	UID     [32]byte           // uid = pub(UKs)

	AgreeKey *ecdh.PrivateKey // UKa: KDF(US, "", "tandem/v1/user-agree", 32), clamped (RFC 7748)
	UKa      [32]byte         // pub(UKa), the X25519 public key
	KID      [32]byte         // kid = H("tandem/v1/kid" || pub(UKa)) (§5.4)

	HomeKey   [32]byte // HK = KDF(US, "", "tandem/v1/home", 32)
	HomeScope [16]byte // H("tandem/v1/home" || uid)[0..16] (§6.2)
	HomeTag   string   // b32(KDF(HK, "", "tandem/v1/tag", 20)) (§5.6)
	InboxTag  string   // b32(KDF(uid, "", "tandem/v1/inbox-tag", 20)) (§5.6)
}

// NewIdentity derives a user's keys from the 32-byte user secret (§5.3).
func NewIdentity(secret [32]byte) *Identity {
	id := &Identity{Secret: secret}
	seed := KDF(secret[:], nil, labelUserSign, ed25519.SeedSize)
	id.SignKey = ed25519.NewKeyFromSeed(seed)
	id.UID = [32]byte(id.SignKey.Public().(ed25519.PublicKey))

	agree := ClampX25519([32]byte(KDF(secret[:], nil, labelUserAgree, 32)))
	k, err := ecdh.X25519().NewPrivateKey(agree[:])
	if err != nil { // unreachable: every 32-byte string is an X25519 scalar
		panic(fmt.Sprintf("suite: X25519 key: %v", err))
	}
	id.AgreeKey = k
	id.UKa = [32]byte(k.PublicKey().Bytes())
	id.KID = KID(id.UKa)

	id.HomeKey = kdf32(secret[:], nil, labelHome)
	id.HomeScope = HomeScope(id.UID)
	id.HomeTag = tag20(id.HomeKey[:], nil, labelTag)
	id.InboxTag = InboxTag(id.UID)
	return id
}

// ClampX25519 clamps a 32-byte X25519 scalar as RFC 7748 §5 does.
func ClampX25519(k [32]byte) [32]byte {
	k[0] &= 248
	k[31] &= 127
	k[31] |= 64
	return k
}

// KID names a user agreement key: H("tandem/v1/kid" || uka) (§5.4).
func KID(uka [32]byte) [32]byte { return H([]byte(labelKID), uka[:]) }

// HomeScope is a user's home scope ID: H("tandem/v1/home" || uid)[0..16] (§6.2).
func HomeScope(uid [32]byte) [16]byte {
	h := H([]byte(labelHomeScope), uid[:])
	return [16]byte(h[:16])
}

// InboxTag is a user's inbox channel tag:
// b32(KDF(uid, "", "tandem/v1/inbox-tag", 20)) (§5.6).
func InboxTag(uid [32]byte) string { return tag20(uid[:], nil, labelInboxTag) }

// HomeTag is the home channel tag for home key hk:
// b32(KDF(HK, "", "tandem/v1/tag", 20)) (§5.6).
func HomeTag(hk [32]byte) string { return tag20(hk[:], nil, labelTag) }

// CollectionTag is the channel tag of a collection epoch with key K(c,e)
// started by the roster statement with ID E:
// b32(KDF(K(c,e), E, "tandem/v1/collection-tag", 20)) (§5.6).
func CollectionTag(epochKey [32]byte, epochID [32]byte) string {
	return tag20(epochKey[:], epochID[:], labelCollTag)
}

// NamedRecordID is id(name) = H("tandem/v1/named" || name)[0..16] (§7.3).
func NamedRecordID(name string) [16]byte {
	h := H([]byte(labelNamed), []byte(name))
	return [16]byte(h[:16])
}

// Commit is the key commitment commit(K) = H("tandem/v1/commit" || K) (§5.7).
func Commit(k [32]byte) [32]byte { return H([]byte(labelCommit), k[:]) }

// Invite holds the keys derived from an invite secret S (§5.3, §5.6).
type Invite struct {
	Secret     [32]byte           // S
	SignKey    ed25519.PrivateKey // VKs = KDF(S, "", "tandem/v1/invite-sign", 32) as a seed
	SignPub    [32]byte           // pub(VKs)
	ChannelKey [32]byte           // KI = KDF(S, "", "tandem/v1/invite-key", 32)
	Tag        string             // b32(KDF(KI, "", "tandem/v1/tag", 20))
}

// NewInvite derives an invite's keys and tag from its secret.
func NewInvite(secret [32]byte) *Invite {
	inv := &Invite{Secret: secret}
	inv.SignKey = ed25519.NewKeyFromSeed(KDF(secret[:], nil, labelInviteSign, 32))
	inv.SignPub = [32]byte(inv.SignKey.Public().(ed25519.PublicKey))
	inv.ChannelKey = kdf32(secret[:], nil, labelInviteKey)
	inv.Tag = tag20(inv.ChannelKey[:], nil, labelTag)
	return inv
}

// Pairing holds the channel key and tag derived from a pairing secret P (§5.6).
type Pairing struct {
	Secret [32]byte // P
	Key    [32]byte // KDF(P, "", "tandem/v1/pair-key", 32)
	Tag    string   // b32(KDF(P, "", "tandem/v1/tag", 20)) — from P itself, as §5.6 says
}

// NewPairing derives a pairing session's key and tag from P. The tag comes
// from P, not from the pairing key, as §5.6's table says
// (docs/decisions/tandem-suite-pairing-tag.md).
func NewPairing(p [32]byte) *Pairing {
	return &Pairing{
		Secret: p,
		Key:    kdf32(p[:], nil, labelPairKey),
		Tag:    tag20(p[:], nil, labelTag),
	}
}
