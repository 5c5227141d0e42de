package client

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
	"github.com/ferry-sync/ferry/tandem/internal/tjson"
)

// SignedWrite is one write as it travels in a kind-1 payload (§10.5): the
// signed body and its 64-byte signature. The body's Scope is not carried: a
// reader takes it from the channel (docs/decisions/tandem-client-payload.md).
type SignedWrite struct {
	Body suite.WriteBody
	Sig  []byte
}

// RecordPayload is the record-state form of a kind-1 plaintext (§10.5):
// some or all of one record's writes.
//
//	{ "rec": "<b64u record id>",
//	  "writes": [ { "f", "op", "v" (assign only), "e" (add/remove only), "a",
//	                "d": [dev, millis, counter], "r" (absent iff zero),
//	                "c": [[dev, millis, counter]…], "b": […], "s" } ] }
type RecordPayload struct {
	Record [16]byte
	Writes []SignedWrite
}

// EncodeRecordPayload serializes p with encoding/json (a real serializer,
// §10.5). Byte strings are b64u; "v" is written for assign only and "e" for
// add and remove only, "r" only when the ref is not zero; "c" and "b" are
// always arrays.
func EncodeRecordPayload(p *RecordPayload) ([]byte, error) {
	out := outPayload{Rec: tjson.Bytes(p.Record[:]), Writes: make([]outWrite, 0, len(p.Writes))}
	for i := range p.Writes {
		w := &p.Writes[i]
		b := &w.Body
		if !b.Op.Valid() {
			return nil, fmt.Errorf("%w: op %d", ErrPayload, b.Op)
		}
		o := outWrite{
			F: b.Field, Op: uint8(b.Op), A: tjson.Bytes(b.Author[:]), D: outDot(b.Dot),
			C: outVV(b.Context), B: outVV(b.Base), S: tjson.Bytes(w.Sig),
		}
		switch b.Op {
		case suite.OpAssign:
			v := tjson.Bytes(b.Value)
			o.V = &v
		case suite.OpAdd, suite.OpRemove:
			e := tjson.Bytes(b.Element)
			o.E = &e
		}
		if b.Ref != ([32]byte{}) {
			o.R = tjson.Bytes(b.Ref[:])
		}
		out.Writes = append(out.Writes, o)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPayload, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type outPayload struct {
	Rec    tjson.Bytes `json:"rec"`
	Writes []outWrite  `json:"writes"`
}

type outWrite struct {
	F  string       `json:"f"`
	Op uint8        `json:"op"`
	V  *tjson.Bytes `json:"v,omitempty"`
	E  *tjson.Bytes `json:"e,omitempty"`
	A  tjson.Bytes  `json:"a"`
	D  outDot       `json:"d"`
	R  tjson.Bytes  `json:"r,omitempty"`
	C  []outDot     `json:"c"`
	B  []outDot     `json:"b"`
	S  tjson.Bytes  `json:"s"`
}

// outDot is a dot or a version-vector entry: [ "<b64u device>", millis, counter ].
type outDot suite.Dot

func (d outDot) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{tjson.B64U(d.Device[:]), d.HLC.Millis, d.HLC.Counter})
}

func outVV(v suite.VV) []outDot {
	out := make([]outDot, len(v))
	for i, d := range v {
		out[i] = outDot(d)
	}
	return out
}

// Payload is a decoded kind-1 plaintext: exactly one of Record and
// Inventory is set (§10.5).
type Payload struct {
	Record *RecordPayload
	// Inventory is the raw payload of an inventory fragment, to be read by
	// roster.DecodeFragment.
	Inventory []byte
}

// DecodePayload reads a kind-1 plaintext (§10.5) with the strict reader
// (tandem/tjson): duplicate names, invalid UTF-8, trailing data, numbers out
// of range and wrong types reject it whole. It also rejects a payload with
// both or neither of the two forms, a write whose "v" or "e" is present or
// absent against its op, an explicit all-zero "r", a dot that is not
// [b64u 8 bytes, millis ≤ 2^48-1, counter ≤ 65535], and an empty "writes".
// Unknown members are ignored. scope is set as every write's Scope except a
// genesis's (a _roster write with no "r"), whose scope is zero (§5.5, §7.1).
// Errors wrap ErrPayload; it never panics.
func DecodePayload(plaintext []byte, scope [16]byte) (*Payload, error) {
	var in inPayload
	if err := tjson.Unmarshal(plaintext, &in); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPayload, err)
	}
	hasRec := in.Rec != nil || in.Writes != nil
	switch {
	case hasRec && in.Inventory != nil:
		return nil, fmt.Errorf("%w: both record and inventory forms", ErrPayload)
	case in.Inventory != nil:
		return &Payload{Inventory: plaintext}, nil
	case in.Rec == nil || in.Writes == nil:
		return nil, fmt.Errorf("%w: neither a complete record form (rec, writes) nor an inventory", ErrPayload)
	case len(*in.Writes) == 0:
		return nil, fmt.Errorf("%w: no writes", ErrPayload)
	}
	p := &RecordPayload{Record: *in.Rec, Writes: make([]SignedWrite, 0, len(*in.Writes))}
	for i, w := range *in.Writes {
		sw, err := w.signed(p.Record, scope)
		if err != nil {
			return nil, fmt.Errorf("%w: writes[%d]: %w", ErrPayload, i, err)
		}
		p.Writes = append(p.Writes, sw)
	}
	return &Payload{Record: p}, nil
}

type inPayload struct {
	Rec       *[16]byte    `json:"rec"`
	Writes    *[]inWrite   `json:"writes"`
	Inventory *tjson.Value `json:"inventory"`
}

type inWrite struct {
	F  string    `json:"f" tjson:"required"`
	Op uint8     `json:"op" tjson:"required"`
	V  *[]byte   `json:"v"`
	E  *[]byte   `json:"e"`
	A  [32]byte  `json:"a" tjson:"required"`
	D  inDot     `json:"d" tjson:"required"`
	R  *[32]byte `json:"r"`
	C  []inDot   `json:"c" tjson:"required"`
	B  []inDot   `json:"b" tjson:"required"`
	S  [64]byte  `json:"s" tjson:"required"`
}

func (w *inWrite) signed(rec, scope [16]byte) (SignedWrite, error) {
	op := suite.Op(w.Op)
	if !op.Valid() {
		return SignedWrite{}, fmt.Errorf("unknown op %d", w.Op)
	}
	if (w.V != nil) != (op == suite.OpAssign) {
		return SignedWrite{}, fmt.Errorf("\"v\" must be present exactly for assign")
	}
	if (w.E != nil) != (op == suite.OpAdd || op == suite.OpRemove) {
		return SignedWrite{}, fmt.Errorf("\"e\" must be present exactly for add and remove")
	}
	body := suite.WriteBody{Scope: scope, Record: rec, Field: w.F, Op: op, Author: w.A, Dot: suite.Dot(w.D)}
	if w.V != nil {
		body.Value = *w.V
	}
	if w.E != nil {
		body.Element = *w.E
	}
	if w.R != nil {
		if *w.R == ([32]byte{}) {
			return SignedWrite{}, fmt.Errorf("\"r\" is zero: omit it instead")
		}
		body.Ref = *w.R
	} else if rec == rosterRecordID {
		body.Scope = [16]byte{} // a genesis: zero scope (§5.5, §7.1)
	}
	body.Context, body.Base = inVV(w.C), inVV(w.B)
	if len(body.Context) > suite.MaxVVEntries || len(body.Base) > suite.MaxVVEntries {
		return SignedWrite{}, suite.ErrVVTooLong
	}
	return SignedWrite{Body: body, Sig: bytes.Clone(w.S[:])}, nil
}

func inVV(ds []inDot) suite.VV {
	if len(ds) == 0 {
		return nil
	}
	v := make(suite.VV, len(ds))
	for i, d := range ds {
		v[i] = suite.Dot(d)
	}
	return v
}

// inDot reads [ "<b64u 8 bytes>", millis, counter ].
type inDot suite.Dot

// UnmarshalTJSON implements tjson.Unmarshaler.
func (d *inDot) UnmarshalTJSON(v tjson.Value) error {
	elems, err := v.Elems()
	if err != nil {
		return err
	}
	if len(elems) != 3 {
		return &tjson.Error{Reason: tjson.ErrType, Offset: v.Offset(), Detail: "a dot is [device, millis, counter]"}
	}
	var dev [8]byte
	if err := elems[0].Decode(&dev); err != nil {
		return err
	}
	millis, err := elems[1].Uint()
	if err != nil {
		return err
	}
	if millis > suite.MaxHLCMillis {
		return &tjson.Error{Reason: tjson.ErrInteger, Offset: elems[1].Offset(), Detail: "HLC millis above 2^48-1"}
	}
	var counter uint16
	if err := elems[2].Decode(&counter); err != nil {
		return err
	}
	*d = inDot{Device: dev, HLC: suite.HLC{Millis: millis, Counter: counter}}
	return nil
}
