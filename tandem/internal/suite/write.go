package suite

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
)

// DeviceID is the 8-byte random ID of one installation (§5.3).
type DeviceID [8]byte

// Compare orders device IDs by their bytes: -1, 0 or +1.
func (d DeviceID) Compare(o DeviceID) int { return bytes.Compare(d[:], o[:]) }

// MaxHLCMillis is the largest HLC millis value: millis is a u48 (§9.1).
const MaxHLCMillis = 1<<48 - 1

// HLC is a hybrid logical clock value (§9.1): millis (u48) and a counter.
type HLC struct {
	Millis  uint64
	Counter uint16
}

// Compare orders HLCs as (millis, counter): -1, 0 or +1.
func (h HLC) Compare(o HLC) int {
	switch {
	case h.Millis < o.Millis:
		return -1
	case h.Millis > o.Millis:
		return 1
	case h.Counter < o.Counter:
		return -1
	case h.Counter > o.Counter:
		return 1
	}
	return 0
}

// Dot is a write's position in its device's history: (deviceID, hlc) (§9.1).
type Dot struct {
	Device DeviceID
	HLC    HLC
}

// VV is a version vector: entries sorted by Device, each device at most once
// (§5.5, §9.2).
type VV []Dot

// MaxVVEntries is the largest number of entries a context or base may have
// (§9.2).
const MaxVVEntries = 1024

// Check reports whether v may be signed: at most MaxVVEntries entries,
// sorted by device ID with no device twice, every millis within 48 bits.
func (v VV) Check() error {
	if len(v) > MaxVVEntries {
		return fmt.Errorf("%w: %d entries", ErrVVTooLong, len(v))
	}
	for i, d := range v {
		if d.HLC.Millis > MaxHLCMillis {
			return fmt.Errorf("%w: entry %d", ErrHLCRange, i)
		}
		if i > 0 && v[i-1].Device.Compare(d.Device) >= 0 {
			return fmt.Errorf("%w: entry %d", ErrVVUnsorted, i)
		}
	}
	return nil
}

// appendVV appends vv(x) (§5.5):
//
//	vv(x) = u16(n) || n × ( deviceID (8) || u64(millis) || u16(counter) )
//
// The caller has checked v.
func appendVV(b []byte, v VV) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	for _, d := range v {
		b = appendDot(b, d)
	}
	return b
}

func appendDot(b []byte, d Dot) []byte {
	b = append(b, d.Device[:]...)
	b = binary.BigEndian.AppendUint64(b, d.HLC.Millis)
	return binary.BigEndian.AppendUint16(b, d.HLC.Counter)
}

// Op is a write operation (§5.5, §9.1).
type Op uint8

// The write operations of §5.5.
const (
	OpAssign Op = 1 // register assign
	OpAdd    Op = 2 // set element add
	OpRemove Op = 3 // set element remove
	OpDelete Op = 4 // record tombstone
)

// Valid reports whether op is one of the four defined operations.
func (op Op) Valid() bool { return op >= OpAssign && op <= OpDelete }

// WriteBody holds the signed fields of a write (§5.5, §9.1). Element is the
// set element of an add or remove; Value is the value of an assign. Value
// enters sigInput as H(value), except that remove and delete always enter
// H("") as §5.5 says, whatever Value holds. Whether a write may carry an
// element or value its op does not use is the record layer's question
// (tandem/record rejects it); sigInput is §5.5's function of every body.
type WriteBody struct {
	Scope   [16]byte // collection ID, the home scope (§6.2), or zero in a genesis
	Record  [16]byte
	Field   string // UTF-8 bytes, not normalized (§9.1)
	Op      Op
	Element []byte // set element for add/remove, else empty
	Value   []byte
	Author  [32]byte // the author's uid = pub(UKs)
	Dot     Dot
	Ref     [32]byte // roster statement written under, or previous statement; zero if none
	Context VV
	Base    VV
}

// writePrefix starts every write's sigInput (§5.5).
const writePrefix = "TANDEM-WRITE-V1"

// SigInput returns the exact bytes a write's signature covers (§5.5):
//
//	"TANDEM-WRITE-V1" (15) || scopeID (16) || recordID (16) || lp(field)
//	|| u8(op) || lp(element) || H(value) || authorUID (32) || deviceID (8)
//	|| u64(hlcMillis) || u16(hlcCounter) || ref (32) || vv(context) || vv(base)
//
// H(value) is H("") for remove and delete, whatever w.Value holds.
// It fails with ErrBadOp for an op outside 1..4, ErrHLCRange for millis above
// 48 bits, and ErrVVTooLong or ErrVVUnsorted for a context or base that
// cannot be signed (§9.2); see docs/decisions/tandem-suite-write-limits.md.
func (w *WriteBody) SigInput() ([]byte, error) {
	if !w.Op.Valid() {
		return nil, fmt.Errorf("%w: %d", ErrBadOp, w.Op)
	}
	if w.Dot.HLC.Millis > MaxHLCMillis {
		return nil, fmt.Errorf("%w: dot", ErrHLCRange)
	}
	if err := w.Context.Check(); err != nil {
		return nil, fmt.Errorf("context: %w", err)
	}
	if err := w.Base.Check(); err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	n := len(writePrefix) + 16 + 16 + 4 + len(w.Field) + 1 + 4 + len(w.Element) +
		32 + 32 + 18 + 32 + 2 + 18*len(w.Context) + 2 + 18*len(w.Base)
	b := make([]byte, 0, n)
	b = append(b, writePrefix...)
	b = append(b, w.Scope[:]...)
	b = append(b, w.Record[:]...)
	b = appendLP(b, []byte(w.Field))
	b = append(b, byte(w.Op))
	b = appendLP(b, w.Element)
	hv := valueHash(w.Op, w.Value)
	b = append(b, hv[:]...)
	b = append(b, w.Author[:]...)
	b = appendDot(b, w.Dot)
	b = append(b, w.Ref[:]...)
	b = appendVV(b, w.Context)
	b = appendVV(b, w.Base)
	return b, nil
}

// valueHash is sigInput's H(value): "value bytes; H("") for remove/delete"
// (§5.5). See docs/decisions/tandem-suite-write-limits.md.
func valueHash(op Op, value []byte) [32]byte {
	if op == OpRemove || op == OpDelete {
		return H(nil)
	}
	return H(value)
}

// WriteID is a write's ID: H(sigInput) (§5.5).
func WriteID(sigInput []byte) [32]byte { return H(sigInput) }

// SignWrite computes w's sigInput and write ID and signs sigInput with priv,
// the author's user signing key UKs (§5.5). It does not check that
// w.Author is pub(priv); VerifyStrict against w.Author will fail if not.
func SignWrite(priv ed25519.PrivateKey, w *WriteBody) (sigInput []byte, id [32]byte, sig []byte, err error) {
	sigInput, err = w.SigInput()
	if err != nil {
		return nil, id, nil, err
	}
	return sigInput, WriteID(sigInput), ed25519.Sign(priv, sigInput), nil
}

// VerifyWrite checks sig over w's sigInput against w.Author with
// VerifyStrict and returns the write ID. It fails with ErrSignature.
func VerifyWrite(w *WriteBody, sig []byte) (id [32]byte, err error) {
	si, err := w.SigInput()
	if err != nil {
		return id, err
	}
	if !VerifyStrict(w.Author[:], si, sig) {
		return id, ErrSignature
	}
	return WriteID(si), nil
}
