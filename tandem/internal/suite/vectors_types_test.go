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
	Secret    hexBytes `json:"secret,required"`
	UID       hexBytes `json:"uid,required"`
	UKa       hexBytes `json:"uka,required"`
	HomeKey   hexBytes `json:"home_key,required"`
	HomeTag   string   `json:"home_tag,required"`
	InboxTag  string   `json:"inbox_tag,required"`
	HomeScope hexBytes `json:"home_scope,required"`
	KID       hexBytes `json:"kid,required"`
	BackupKey string   `json:"backup_key,required"`
}

type namedVec struct {
	Name string   `json:"name"`
	ID   hexBytes `json:"id,required"`
}

type commitVec struct {
	Key    hexBytes `json:"key,required"`
	Commit hexBytes `json:"commit,required"`
}

type collTagVec struct {
	Key   hexBytes `json:"key,required"`
	Epoch hexBytes `json:"epoch,required"`
	Tag   string   `json:"tag,required"`
}

type inviteVec struct {
	Secret     hexBytes `json:"secret,required"`
	SignPub    hexBytes `json:"sign_pub,required"`
	ChannelKey hexBytes `json:"channel_key,required"`
	Tag        string   `json:"tag,required"`
}

type pairingVec struct {
	P    hexBytes `json:"p,required"`
	Key  hexBytes `json:"key,required"`
	Tag  string   `json:"tag,required"`
	EK   hexBytes `json:"ek,required"`
	N    hexBytes `json:"n,required"`
	Code string   `json:"code,required"`
}

type envelopeVec struct {
	Kind      uint8    `json:"kind,required"`
	Key       hexBytes `json:"key,required"`
	Salt      hexBytes `json:"salt,required"`
	Tag       string   `json:"tag,required"`
	Plaintext hexBytes `json:"plaintext"`
	Envelope  hexBytes `json:"envelope,required"`
}

type inboxVec struct {
	RecipientSecret hexBytes `json:"recipient_secret,required"`
	Tag             string   `json:"tag,required"`
	Plaintext       hexBytes `json:"plaintext"`
	Envelope        hexBytes `json:"envelope,required"`
}

type writeVec struct {
	AuthorSecret hexBytes  `json:"author_secret,required"`
	Scope        hexBytes  `json:"scope,required"`
	Record       hexBytes  `json:"record,required"`
	Field        string    `json:"field"`
	Op           uint8     `json:"op,required"`
	Element      hexBytes  `json:"element"`
	Value        hexBytes  `json:"value"`
	Device       hexBytes  `json:"device,required"`
	Millis       uint64    `json:"millis"`
	Counter      uint16    `json:"counter"`
	Ref          hexBytes  `json:"ref,required"`
	Context      []vvEntry `json:"context"`
	Base         []vvEntry `json:"base"`
	SigInput     hexBytes  `json:"sig_input,required"`
	WriteID      hexBytes  `json:"write_id,required"`
	Sig          hexBytes  `json:"sig,required"`
}

type inventoryRecordVec struct {
	ID     hexBytes   `json:"id,required"`
	Writes []hexBytes `json:"writes"`
}

type inventoryVec struct {
	Records []inventoryRecordVec `json:"records"`
	Bytes   hexBytes             `json:"bytes,required"`
	Hash    hexBytes             `json:"hash,required"`
}

type edVec struct {
	Comment string   `json:"comment"`
	Pub     hexBytes `json:"pub,required"`
	Msg     hexBytes `json:"msg"`
	Sig     hexBytes `json:"sig,required"`
	Valid   bool     `json:"valid"`
}

// signedObjVec is one of the other signed byte strings (§5.5): type is
// join, invite, grant, keyreq, leave or pair-code; fields holds its inputs
// (hex, except name as a string).
type signedObjVec struct {
	Type   string            `json:"type,required"`
	Fields map[string]string `json:"fields,required"`
	Bytes  hexBytes          `json:"bytes,required"`
}

// backupVec is a typed backup key: the secret it gives, or ok false.
type backupVec struct {
	Input  string   `json:"input"`
	OK     bool     `json:"ok"`
	Secret hexBytes `json:"secret"`
}

// pairReplyVec is an open-only pairing reply (§6.3 step 4).
type pairReplyVec struct {
	EKSecret   hexBytes `json:"ek_secret,required"`
	EK         hexBytes `json:"ek,required"`
	UID        hexBytes `json:"uid,required"`
	Sealed     hexBytes `json:"sealed,required"`
	UserSecret hexBytes `json:"user_secret,required"`
}
