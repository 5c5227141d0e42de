package suite

// The signed byte strings of objects other than writes (§5.5 "Other signed
// objects"). Each starts with its own ASCII prefix so that no signature can
// be replayed as another kind of object. Sign them with ed25519.Sign and
// check them with VerifyStrict.

// JoinSigInput is what a joiner signs in a join request (§11.2):
//
//	"TANDEM-JOIN-V1" || collectionID (16) || inviteID (16) || uid (32) || uka (32) || lp(name)
func JoinSigInput(collection, invite [16]byte, uid, uka [32]byte, name string) []byte {
	b := make([]byte, 0, len(prefixJoin)+16+16+32+32+4+len(name))
	b = append(b, prefixJoin...)
	b = append(b, collection[:]...)
	b = append(b, invite[:]...)
	b = append(b, uid[:]...)
	b = append(b, uka[:]...)
	return appendLP(b, []byte(name))
}

// InviteSigInput is what the invite key VKs signs in a join request (§11.2):
//
//	"TANDEM-INVITE-V1" || collectionID (16) || inviteID (16) || uid (32)
func InviteSigInput(collection, invite [16]byte, uid [32]byte) []byte {
	b := make([]byte, 0, len(prefixInvite)+64)
	b = append(b, prefixInvite...)
	b = append(b, collection[:]...)
	b = append(b, invite[:]...)
	return append(b, uid[:]...)
}

// GrantSigInput is what the owner signs in a grant (§11.4):
//
//	"TANDEM-GRANT-V1" || recipientUID (32) || collectionID (16) || at (32) || epoch (32) || commit(k) (32)
//
// epochKey is k; its commitment (§5.7) is what enters the bytes.
func GrantSigInput(recipient [32]byte, collection [16]byte, at, epoch, epochKey [32]byte) []byte {
	c := Commit(epochKey)
	b := make([]byte, 0, len(prefixGrant)+32+16+96)
	b = append(b, prefixGrant...)
	b = append(b, recipient[:]...)
	b = append(b, collection[:]...)
	b = append(b, at[:]...)
	b = append(b, epoch[:]...)
	return append(b, c[:]...)
}

// KeyReqSigInput is what a member signs in a key request (§11.4):
//
//	"TANDEM-KEYREQ-V1" || collectionID (16) || have (32) || uid (32)
//
// have is the ID of the latest roster statement the member holds
// (docs/decisions/tandem-suite-signed-strings.md).
func KeyReqSigInput(collection [16]byte, have, uid [32]byte) []byte {
	b := make([]byte, 0, len(prefixKeyReq)+80)
	b = append(b, prefixKeyReq...)
	b = append(b, collection[:]...)
	b = append(b, have[:]...)
	return append(b, uid[:]...)
}

// LeaveSigInput is what a member signs in a leave notice (§11.5):
//
//	"TANDEM-LEAVE-V1" || collectionID (16) || uid (32) || at (32)
func LeaveSigInput(collection [16]byte, uid, at [32]byte) []byte {
	b := make([]byte, 0, len(prefixLeave)+80)
	b = append(b, prefixLeave...)
	b = append(b, collection[:]...)
	b = append(b, uid[:]...)
	return append(b, at[:]...)
}

// PairChallengeSigInput is what the showing device signs with the user key
// in a pairing challenge (§6.3 step 2):
//
//	"TANDEM-PAIR-CODE-V1" || P (32) || ek (32) || n (16)
func PairChallengeSigInput(p, ek [32]byte, n [16]byte) []byte {
	return pairSigInput(prefixPairCodeSg, p, ek, n)
}

// PairDeclineSigInput is what the showing device signs with the user key
// when the person says no to a pairing request (not in §6.3;
// docs/decisions/tandem-pairing-refusal.md), n being the nonce of the
// challenge it answers:
//
//	"TANDEM-PAIR-DECLINE-V1" || P (32) || ek (32) || n (16)
func PairDeclineSigInput(p, ek [32]byte, n [16]byte) []byte {
	return pairSigInput(prefixPairNoSg, p, ek, n)
}

// pairSigInput is prefix || P || ek || n.
func pairSigInput(prefix string, p, ek [32]byte, n [16]byte) []byte {
	b := make([]byte, 0, len(prefix)+80)
	b = append(b, prefix...)
	b = append(b, p[:]...)
	b = append(b, ek[:]...)
	return append(b, n[:]...)
}
