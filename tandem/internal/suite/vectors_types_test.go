package suite

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// The shape of testdata/vectors/tandem-v1.json (docs/vectors.md). Byte
// strings are lowercase hex. The file is read with the strict reader.

type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *hexBytes) UnmarshalTJSON(v tjson.Value) error {
	s, err := v.Str()
	if err != nil {
		return err
	}
	b, err := hex.DecodeString(s)
	if err != nil || hex.EncodeToString(b) != s {
		return fmt.Errorf("not lowercase hex: %q", s)
	}
	*h = b
	return nil
}

// vvEntry is [device hex, millis, counter].
type vvEntry struct {
	Device  hexBytes
	Millis  uint64
	Counter uint16
}

func (e vvEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{e.Device, e.Millis, e.Counter})
}

func (e *vvEntry) UnmarshalTJSON(v tjson.Value) error {
	var t [3]tjson.Value
	if err := v.Decode(&t); err != nil {
		return err
	}
	if err := t[0].Decode(&e.Device); err != nil {
		return err
	}
	if err := t[1].Decode(&e.Millis); err != nil {
		return err
	}
	return t[2].Decode(&e.Counter)
}

type vectorFile struct {
	Description    string         `json:"description"`
	Users          []userVec      `json:"users"`
	NamedRecords   []namedVec     `json:"named_records"`
	Commitments    []commitVec    `json:"commitments"`
	CollectionTags []collTagVec   `json:"collection_tags"`
	Invites        []inviteVec    `json:"invites"`
	Pairings       []pairingVec   `json:"pairings"`
	Envelopes      []envelopeVec  `json:"envelopes"`
	Inbox          []inboxVec     `json:"inbox"`
	Writes         []writeVec     `json:"writes"`
	Inventories    []inventoryVec `json:"inventories"`
	Ed25519        []edVec        `json:"ed25519"`
	SignedObjects  []signedObjVec `json:"signed_objects"`
	BackupInputs   []backupVec    `json:"backup_key_inputs"`
	PairReplies    []pairReplyVec `json:"pair_replies"`
}

type userVec struct {
	Secret    hexBytes `json:"secret" tjson:"required"`
	UID       hexBytes `json:"uid" tjson:"required"`
	UKa       hexBytes `json:"uka" tjson:"required"`
	HomeKey   hexBytes `json:"home_key" tjson:"required"`
	HomeTag   string   `json:"home_tag" tjson:"required"`
	InboxTag  string   `json:"inbox_tag" tjson:"required"`
	HomeScope hexBytes `json:"home_scope" tjson:"required"`
	KID       hexBytes `json:"kid" tjson:"required"`
	BackupKey string   `json:"backup_key" tjson:"required"`
}

type namedVec struct {
	Name string   `json:"name"`
	ID   hexBytes `json:"id" tjson:"required"`
}

type commitVec struct {
	Key    hexBytes `json:"key" tjson:"required"`
	Commit hexBytes `json:"commit" tjson:"required"`
}

type collTagVec struct {
	Key   hexBytes `json:"key" tjson:"required"`
	Epoch hexBytes `json:"epoch" tjson:"required"`
	Tag   string   `json:"tag" tjson:"required"`
}

type inviteVec struct {
	Secret     hexBytes `json:"secret" tjson:"required"`
	SignPub    hexBytes `json:"sign_pub" tjson:"required"`
	ChannelKey hexBytes `json:"channel_key" tjson:"required"`
	Tag        string   `json:"tag" tjson:"required"`
}

type pairingVec struct {
	P    hexBytes `json:"p" tjson:"required"`
	Key  hexBytes `json:"key" tjson:"required"`
	Tag  string   `json:"tag" tjson:"required"`
	EK   hexBytes `json:"ek" tjson:"required"`
	N    hexBytes `json:"n" tjson:"required"`
	Code string   `json:"code" tjson:"required"`
}

type envelopeVec struct {
	Kind      uint8    `json:"kind" tjson:"required"`
	Key       hexBytes `json:"key" tjson:"required"`
	Salt      hexBytes `json:"salt" tjson:"required"`
	Tag       string   `json:"tag" tjson:"required"`
	Plaintext hexBytes `json:"plaintext"`
	Envelope  hexBytes `json:"envelope" tjson:"required"`
}

type inboxVec struct {
	RecipientSecret hexBytes `json:"recipient_secret" tjson:"required"`
	Tag             string   `json:"tag" tjson:"required"`
	Plaintext       hexBytes `json:"plaintext"`
	Envelope        hexBytes `json:"envelope" tjson:"required"`
}

type writeVec struct {
	AuthorSecret hexBytes  `json:"author_secret" tjson:"required"`
	Scope        hexBytes  `json:"scope" tjson:"required"`
	Record       hexBytes  `json:"record" tjson:"required"`
	Field        string    `json:"field"`
	Op           uint8     `json:"op" tjson:"required"`
	Element      hexBytes  `json:"element"`
	Value        hexBytes  `json:"value"`
	Device       hexBytes  `json:"device" tjson:"required"`
	Millis       uint64    `json:"millis"`
	Counter      uint16    `json:"counter"`
	Ref          hexBytes  `json:"ref" tjson:"required"`
	Context      []vvEntry `json:"context"`
	Base         []vvEntry `json:"base"`
	SigInput     hexBytes  `json:"sig_input" tjson:"required"`
	WriteID      hexBytes  `json:"write_id" tjson:"required"`
	Sig          hexBytes  `json:"sig" tjson:"required"`
}

type inventoryRecordVec struct {
	ID     hexBytes   `json:"id" tjson:"required"`
	Writes []hexBytes `json:"writes"`
}

type inventoryVec struct {
	Records []inventoryRecordVec `json:"records"`
	Bytes   hexBytes             `json:"bytes" tjson:"required"`
	Hash    hexBytes             `json:"hash" tjson:"required"`
}

type edVec struct {
	Comment string   `json:"comment"`
	Pub     hexBytes `json:"pub" tjson:"required"`
	Msg     hexBytes `json:"msg"`
	Sig     hexBytes `json:"sig" tjson:"required"`
	Valid   bool     `json:"valid"`
}

// signedObjVec is one of the other signed byte strings (§5.5): type is
// join, invite, grant, keyreq, leave or pair-code; fields holds its inputs
// (hex, except name as a string).
type signedObjVec struct {
	Type   string            `json:"type" tjson:"required"`
	Fields map[string]string `json:"fields" tjson:"required"`
	Bytes  hexBytes          `json:"bytes" tjson:"required"`
}

// backupVec is a typed backup key: the secret it gives, or ok false.
type backupVec struct {
	Input  string   `json:"input"`
	OK     bool     `json:"ok"`
	Secret hexBytes `json:"secret"`
}

// pairReplyVec is an open-only pairing reply (§6.3 step 4).
type pairReplyVec struct {
	EKSecret   hexBytes `json:"ek_secret" tjson:"required"`
	EK         hexBytes `json:"ek" tjson:"required"`
	UID        hexBytes `json:"uid" tjson:"required"`
	Sealed     hexBytes `json:"sealed" tjson:"required"`
	UserSecret hexBytes `json:"user_secret" tjson:"required"`
}
