package tandem

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// Pairing limits (§6.3; docs/decisions/tandem-pairing.md).
const (
	pairTTL           = 120 * time.Second // exp = now + 120 s
	maxPairChallenges = 3                 // answers per QR code
	maxPairPayload    = 8 << 10           // bytes of a QR payload
	maxPairName       = 256               // bytes of a request's name
	maxPairReply      = 1 << 10           // bytes of a sealed reply
)

// pairPayload is the pairing QR code (§6.3):
//
//	{ "t": "pair", "v": 1, "hub": <hub descriptor §13.1>, "u": "<b64u uid>", "p": "<b64u P>", "exp": <unix ms> }
//
// hub is absent only when the showing device brings its own binding
// (Options.Store) and so has no descriptor to pass on.
type pairPayload struct {
	hub Hub
	uid [32]byte
	p   [32]byte
	exp time.Time
}

func (pl pairPayload) encode() (string, error) {
	j := struct {
		T   string      `json:"t"`
		V   int         `json:"v"`
		Hub *Hub        `json:"hub,omitempty"`
		U   tjson.Bytes `json:"u"`
		P   tjson.Bytes `json:"p"`
		Exp int64       `json:"exp"`
	}{T: "pair", V: 1, U: pl.uid[:], P: pl.p[:], Exp: pl.exp.UnixMilli()}
	if !pl.hub.IsZero() {
		j.Hub = &pl.hub
	}
	b, err := json.Marshal(j)
	return string(b), err
}

// parsePairPayload reads a pairing QR code with the strict reader (§10.5:
// a duplicate key, among others, rejects the text whole). It does not look
// at the expiry; the caller does.
func parsePairPayload(s string) (pairPayload, error) {
	if len(s) > maxPairPayload {
		return pairPayload{}, newErr(CodeInvalid, nil, "this is not a code for adding a device")
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
		return pairPayload{}, newErr(CodeInvalid, err, "this is not a code for adding a device")
	}
	if j.T != "pair" {
		return pairPayload{}, newErr(CodeInvalid, nil, "this is not a code for adding a device")
	}
	if j.V != 1 {
		return pairPayload{}, newErr(CodeInvalid, nil, "this code for adding a device needs a newer version of Ferry")
	}
	pl := pairPayload{uid: j.U, p: j.P, exp: time.UnixMilli(int64(j.Exp))}
	if j.Hub != nil {
		h, err := ParseHub(j.Hub.Raw())
		if err != nil {
			return pairPayload{}, newErr(CodeInvalid, err, "this code for adding a device names no usable sync hub")
		}
		pl.hub = h
	}
	return pl, nil
}

// pairKind says which of the three pairing messages a kind-3 plaintext is.
type pairKind int

const (
	pairRequest   pairKind = iota + 1 // { "name", "ek" }
	pairChallenge                     // { "ek", "n", "sig" }
	pairReply                         // { "ek", "reply" }
)

// pairMsg is one message of the pairing channel (§6.3).
type pairMsg struct {
	kind   pairKind
	name   string   // request
	ek     [32]byte // every kind: the new device's one-time key
	n      [16]byte // challenge
	sig    [64]byte // challenge
	sealed []byte   // reply: HPKE enc || ct (§5.4)
}

// encode writes m's plaintext.
func (m pairMsg) encode() ([]byte, error) {
	var j any
	switch m.kind {
	case pairRequest:
		j = struct {
			Name string      `json:"name"`
			EK   tjson.Bytes `json:"ek"`
		}{m.name, m.ek[:]}
	case pairChallenge:
		j = struct {
			EK  tjson.Bytes `json:"ek"`
			N   tjson.Bytes `json:"n"`
			Sig tjson.Bytes `json:"sig"`
		}{m.ek[:], m.n[:], m.sig[:]}
	case pairReply:
		j = struct {
			EK    tjson.Bytes `json:"ek"`
			Reply tjson.Bytes `json:"reply"`
		}{m.ek[:], m.sealed}
	default:
		return nil, fmt.Errorf("tandem: pairing message of kind %d", m.kind)
	}
	return json.Marshal(j)
}

// parsePairMsg reads a pairing plaintext strictly. Its kind is given by
// which members it has: exactly those of one kind (unknown members are
// ignored, §10.5); anything else is an error.
func parsePairMsg(pt []byte) (pairMsg, error) {
	var j struct {
		Name  *string   `json:"name"`
		EK    [32]byte  `json:"ek" tjson:"required"`
		N     *[16]byte `json:"n"`
		Sig   *[64]byte `json:"sig"`
		Reply *[]byte   `json:"reply"`
	}
	if err := tjson.Unmarshal(pt, &j); err != nil {
		return pairMsg{}, err
	}
	m := pairMsg{ek: j.EK}
	switch {
	case j.Name != nil && j.N == nil && j.Sig == nil && j.Reply == nil:
		if !pairNameOK(*j.Name) {
			return pairMsg{}, fmt.Errorf("tandem: pairing request name of %d bytes, or with control characters", len(*j.Name))
		}
		m.kind, m.name = pairRequest, *j.Name
	case j.N != nil && j.Sig != nil && j.Name == nil && j.Reply == nil:
		m.kind, m.n, m.sig = pairChallenge, *j.N, *j.Sig
	case j.Reply != nil && j.Name == nil && j.N == nil && j.Sig == nil:
		if len(*j.Reply) > maxPairReply {
			return pairMsg{}, fmt.Errorf("tandem: pairing reply of %d bytes", len(*j.Reply))
		}
		m.kind, m.sealed = pairReply, *j.Reply
	default:
		return pairMsg{}, fmt.Errorf("tandem: pairing message with the members of no one kind")
	}
	return m, nil
}

// pairNameOK reports whether a device name may be shown in "Add 'name'?
// Code 483 920" (§13.2): at most maxPairName bytes of UTF-8, without
// control characters or bidirectional overrides, which could make the
// line show another name or another code.
func pairNameOK(name string) bool {
	if len(name) > maxPairName || !utf8.ValidString(name) {
		return false
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}
