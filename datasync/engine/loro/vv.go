package loro

import (
	"encoding/binary"
	"errors"
)

// vv is a Loro version vector: for each peer, the counter one past the
// last op held. Its wire form is Loro's VersionVector::encode (postcard: a
// varint count, then per entry a varint peer and a zigzag-varint i32).
type vv map[uint64]int32

var errVV = errors.New("datasync/engine/loro: malformed version vector")

// decodeVV reads an encoded version vector strictly: no trailing bytes, no
// duplicate peers, no negative counters. Empty input is the empty version.
func decodeVV(b []byte) (vv, error) {
	v := vv{}
	if len(b) == 0 {
		return v, nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errVV
	}
	b = b[k:]
	for i := uint64(0); i < n; i++ {
		peer, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errVV
		}
		b = b[k:]
		zz, k := binary.Uvarint(b)
		if k <= 0 || zz > 0xFFFFFFFF {
			return nil, errVV
		}
		b = b[k:]
		c := int64(zz>>1) ^ -int64(zz&1)
		if _, dup := v[peer]; dup || c < 0 {
			return nil, errVV
		}
		v[peer] = int32(c)
	}
	if len(b) != 0 {
		return nil, errVV
	}
	return v, nil
}

// le reports whether v ≤ w pointwise (w includes everything v counts).
func (v vv) le(w vv) bool {
	for p, c := range v {
		if c > w[p] {
			return false
		}
	}
	return true
}

func (v vv) empty() bool {
	for _, c := range v {
		if c > 0 {
			return false
		}
	}
	return true
}

// mustVV decodes bytes the module itself produced.
func mustVV(b []byte) vv {
	v, err := decodeVV(b)
	if err != nil {
		return vv{}
	}
	return v
}
