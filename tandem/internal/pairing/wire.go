package pairing

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/tandem/hub"
	"github.com/ferry-sync/ferry/tandem/internal/hubdesc"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Pairing limits (§6.3; docs/decisions/tandem-pairing.md).
const (
	TTL           = 120 * time.Second // exp = now + 120 s
	maxChallenges = 3                 // answers per QR code
	maxPayload    = 8 << 10           // bytes of a QR payload
	MaxName       = 256               // bytes of a request's name
	maxReply      = 1 << 10           // bytes of a sealed reply
)

// Payload is the pairing QR code (§6.3):
//
//	{ "t": "pair", "v": 1, "hub": <hub descriptor §13.1>, "u": "<b64u uid>", "p": "<b64u P>", "exp": <unix ms> }
//
// Hub is zero only when the showing device brings its own binding
// (tandem.Options.Store) and so has no descriptor to pass on.
type Payload struct {
	Hub hubdesc.Desc
	UID [32]byte
	P   [32]byte
	Exp time.Time
}

// Encode writes the payload's text.
func (pl Payload) Encode() (string, error) {
	j := struct {
		T   string        `json:"t"`
		V   int           `json:"v"`
		Hub *hubdesc.Desc `json:"hub,omitempty"`
		U   tjson.Bytes   `json:"u"`
		P   tjson.Bytes   `json:"p"`
		Exp int64         `json:"exp"`
	}{T: "pair", V: 1, U: pl.UID[:], P: pl.P[:], Exp: pl.Exp.UnixMilli()}
	if !pl.Hub.IsZero() {
		j.Hub = &pl.Hub
	}
	b, err := json.Marshal(j)
	return string(b), err
}

// ParsePayload reads a pairing QR code with the strict reader (§10.5: a
// duplicate key, among others, rejects the text whole). It does not look
// at the expiry; the caller does. Its errors wrap ErrNotPayload,
// ErrNewerPayload or ErrPayloadHub.
func ParsePayload(s string) (Payload, error) {
	if len(s) > maxPayload {
		return Payload{}, fmt.Errorf("%w: %d bytes", ErrNotPayload, len(s))
	}
	var j struct {
		T   string       `json:"t" tjson:"required"`
		V   uint64       `json:"v" tjson:"required"`
		Hub *tjson.Value `json:"hub"`
		U   [32]byte     `json:"u" tjson:"required"`
		P   [32]byte     `json:"p" tjson:"required"`
		Exp uint64       `json:"exp" tjson:"required"`
	}
	if err := tjson.Unmarshal([]byte(s), &j); err != nil {
		return Payload{}, fmt.Errorf("%w: %w", ErrNotPayload, err)
	}
	if j.T != "pair" {
		return Payload{}, fmt.Errorf("%w: type %q", ErrNotPayload, j.T)
	}
	if j.V != 1 {
		return Payload{}, fmt.Errorf("%w: version %d", ErrNewerPayload, j.V)
	}
	pl := Payload{UID: j.U, P: j.P, Exp: time.UnixMilli(int64(j.Exp))}
	if j.Hub != nil {
		h, err := hubdesc.Parse(j.Hub.Raw())
		if err != nil {
			return Payload{}, fmt.Errorf("%w: %w", ErrPayloadHub, err)
		}
		pl.Hub = h
	}
	return pl, nil
}

// Kind says which of the pairing messages a kind-3 plaintext is.
type Kind int

// The messages of the pairing channel: the three of §6.3 and the decline
// (docs/decisions/tandem-pairing-refusal.md), which a version without it
// reads as a message of no kind and ignores.
const (
	KindRequest   Kind = iota + 1 // { "name", "ek" }
	KindChallenge                 // { "ek", "n", "sig" }
	KindReply                     // { "ek", "reply" }
	KindDecline                   // { "ek", "decline": sig }
)

// Msg is one message of the pairing channel (§6.3).
type Msg struct {
	Kind   Kind
	Name   string   // request
	EK     [32]byte // every kind: the new device's one-time key
	N      [16]byte // challenge
	Sig    [64]byte // challenge, decline
	Sealed []byte   // reply: HPKE enc || ct (§5.4)
	ID     hub.ID   // the hub message it was read from (not on the wire)
}

// Encode writes m's plaintext.
func (m Msg) Encode() ([]byte, error) {
	var j any
	switch m.Kind {
	case KindRequest:
		j = struct {
			Name string      `json:"name"`
			EK   tjson.Bytes `json:"ek"`
		}{m.Name, m.EK[:]}
	case KindChallenge:
		j = struct {
			EK  tjson.Bytes `json:"ek"`
			N   tjson.Bytes `json:"n"`
			Sig tjson.Bytes `json:"sig"`
		}{m.EK[:], m.N[:], m.Sig[:]}
	case KindReply:
		j = struct {
			EK    tjson.Bytes `json:"ek"`
			Reply tjson.Bytes `json:"reply"`
		}{m.EK[:], m.Sealed}
	case KindDecline:
		j = struct {
			EK      tjson.Bytes `json:"ek"`
			Decline tjson.Bytes `json:"decline"`
		}{m.EK[:], m.Sig[:]}
	default:
		return nil, fmt.Errorf("pairing: message of kind %d", m.Kind)
	}
	return json.Marshal(j)
}

// ParseMsg reads a pairing plaintext strictly. Its kind is given by which
// members it has: exactly those of one kind (unknown members are ignored,
// §10.5); anything else is an error.
func ParseMsg(pt []byte) (Msg, error) {
	var j struct {
		Name  *string   `json:"name"`
		EK    [32]byte  `json:"ek" tjson:"required"`
		N     *[16]byte `json:"n"`
		Sig   *[64]byte `json:"sig"`
		Reply *[]byte   `json:"reply"`
		No    *[64]byte `json:"decline"`
	}
	if err := tjson.Unmarshal(pt, &j); err != nil {
		return Msg{}, err
	}
	m := Msg{EK: j.EK}
	if j.No != nil { // a decline has no other member
		if j.Name != nil || j.N != nil || j.Sig != nil || j.Reply != nil {
			return Msg{}, fmt.Errorf("pairing: message with the members of no one kind")
		}
		m.Kind, m.Sig = KindDecline, *j.No
		return m, nil
	}
	switch {
	case j.Name != nil && j.N == nil && j.Sig == nil && j.Reply == nil:
		if !NameOK(*j.Name) {
			return Msg{}, fmt.Errorf("pairing: request name of %d bytes, or with control characters", len(*j.Name))
		}
		m.Kind, m.Name = KindRequest, *j.Name
	case j.N != nil && j.Sig != nil && j.Name == nil && j.Reply == nil:
		m.Kind, m.N, m.Sig = KindChallenge, *j.N, *j.Sig
	case j.Reply != nil && j.Name == nil && j.N == nil && j.Sig == nil:
		if len(*j.Reply) > maxReply {
			return Msg{}, fmt.Errorf("pairing: reply of %d bytes", len(*j.Reply))
		}
		m.Kind, m.Sealed = KindReply, *j.Reply
	default:
		return Msg{}, fmt.Errorf("pairing: message with the members of no one kind")
	}
	return m, nil
}

// NameOK reports whether a device name may be shown in "Add 'name'? Code
// 483 920" (§13.2): at most MaxName bytes of UTF-8, without control
// characters or bidirectional overrides, which could make the line show
// another name or another code.
func NameOK(name string) bool {
	if len(name) > MaxName || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}
