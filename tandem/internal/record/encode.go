package record

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ferry-sync/ferry/tandem/internal/suite"
)

// Canonical state bytes. Two replicas that have seen the same writes hold
// the same kept writes (§9.3) and so encode byte-identical states; the
// convergence tests compare these bytes. The layout (integers big-endian,
// lp(x) = u32(len(x)) || x):
//
//	state  = "TRS1" || u32(recordCount) || record*    records by ascending ID
//	record = recordID (16) || u32(writeCount) || write*  writes by ascending write ID
//	write  = u64(epoch) || lp(field) || u8(op) || lp(element) || lp(value)
//	         || author (32) || deviceID (8) || u64(millis) || u16(counter)
//	         || ref (32) || vv(context) || vv(base) || sig (64)
//	vv(x)  = u16(n) || n × ( deviceID (8) || u64(millis) || u16(counter) )
//
// The scope is not stored: it is the state's (Rules.Scope). A write's record
// is the record it is listed under. The encoding is the state as shown and
// published (Writes): the field writes a tombstone hides are not in it, so
// replicas that agree on every record's state encode alike even if one of
// them also holds hidden writes the others never got. A device persists
// those through All (AppendStored), not through this encoding.
const stateMagic = "TRS1"

// AppendBinary appends the canonical encoding of s to b.
func (s *State) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, stateMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.records)))
	for id := range s.Records() {
		ws := s.Writes(id)
		b = append(b, id[:]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(ws)))
		for _, w := range ws {
			b = appendWrite(b, w)
		}
	}
	return b, nil
}

// MarshalBinary returns the canonical encoding of s.
func (s *State) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

func appendWrite(b []byte, w *Write) []byte {
	b = binary.BigEndian.AppendUint64(b, w.epoch)
	b = appendLP(b, []byte(w.body.Field))
	b = append(b, byte(w.body.Op))
	b = appendLP(b, w.body.Element)
	b = appendLP(b, w.body.Value)
	b = append(b, w.body.Author[:]...)
	b = appendDot(b, w.body.Dot)
	b = append(b, w.body.Ref[:]...)
	b = appendVV(b, w.body.Context)
	b = appendVV(b, w.body.Base)
	return append(b, w.sig...)
}

func appendLP(b, x []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
	return append(b, x...)
}

func appendDot(b []byte, d suite.Dot) []byte {
	b = append(b, d.Device[:]...)
	b = binary.BigEndian.AppendUint64(b, d.HLC.Millis)
	return binary.BigEndian.AppendUint16(b, d.HLC.Counter)
}

func appendVV(b []byte, v suite.VV) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
	for _, d := range v {
		b = appendDot(b, d)
	}
	return b
}

// DecodeState reads a state encoded by MarshalBinary. Every write is checked
// by v exactly as a received one (signature included), since stored bytes
// may have been damaged or altered. It fails with ErrEncoding for truncated,
// trailing or non-canonical bytes (unsorted, duplicated or superseded
// writes), or with Validate's error for an invalid write; it never panics.
func DecodeState(b []byte, v *Validator) (*State, error) {
	d := decoder{b: b}
	if string(d.take(len(stateMagic))) != stateMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrEncoding)
	}
	type entry struct {
		body  suite.WriteBody
		sig   []byte
		epoch uint64
	}
	var entries []entry
	nrec := d.u32()
	for i := uint32(0); i < nrec && d.err == nil; i++ {
		var id [16]byte
		copy(id[:], d.take(16))
		nw := d.u32()
		for j := uint32(0); j < nw && d.err == nil; j++ {
			body, sig, epoch := d.write(v.rules.Scope, id)
			entries = append(entries, entry{body, sig, epoch})
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrEncoding, len(d.b))
	}
	s := NewState(v)
	for i := range entries {
		e := &entries[i]
		w, err := v.Validate(&e.body, e.sig, e.epoch)
		if err != nil {
			return nil, fmt.Errorf("record %x: %w", e.body.Record, err)
		}
		s.Add(w)
	}
	again, _ := s.MarshalBinary()
	if !bytes.Equal(again, b) {
		return nil, fmt.Errorf("%w: not canonical", ErrEncoding)
	}
	return s, nil
}

// decoder reads big-endian fields; after the first short read it returns
// zero values and keeps the error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("%w: truncated", ErrEncoding)
		d.b = nil
		return nil
	}
	x := d.b[:n:n]
	d.b = d.b[n:]
	return x
}

func (d *decoder) u16() uint16 {
	if x := d.take(2); x != nil {
		return binary.BigEndian.Uint16(x)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if x := d.take(4); x != nil {
		return binary.BigEndian.Uint32(x)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if x := d.take(8); x != nil {
		return binary.BigEndian.Uint64(x)
	}
	return 0
}

func (d *decoder) lp() []byte {
	n := d.u32()
	if uint64(n) > uint64(len(d.b)) {
		d.take(len(d.b) + 1) // records the error
		return nil
	}
	return d.take(int(n))
}

func (d *decoder) dot() suite.Dot {
	var dot suite.Dot
	copy(dot.Device[:], d.take(8))
	dot.HLC.Millis = d.u64()
	dot.HLC.Counter = d.u16()
	return dot
}

func (d *decoder) vv() suite.VV {
	n := int(d.u16())
	if n*18 > len(d.b) {
		d.take(len(d.b) + 1)
		return nil
	}
	v := make(suite.VV, n)
	for i := range v {
		v[i] = d.dot()
	}
	return v
}

func (d *decoder) write(scope, record [16]byte) (body suite.WriteBody, sig []byte, epoch uint64) {
	epoch = d.u64()
	body.Scope, body.Record = scope, record
	body.Field = string(d.lp())
	if op := d.take(1); op != nil {
		body.Op = suite.Op(op[0])
	}
	body.Element = d.lp()
	body.Value = d.lp()
	copy(body.Author[:], d.take(32))
	body.Dot = d.dot()
	copy(body.Ref[:], d.take(32))
	body.Context = d.vv()
	body.Base = d.vv()
	sig = d.take(64)
	return body, sig, epoch
}
