package changecodec

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
)

// The MessagePack subset of Bytes.ts encodeJsonValue and decodeJsonValue.

// appendMsgpack appends v as Bytes.ts encodeJsonValue does.
func appendMsgpack(b []byte, v any) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, 0xc0)
	case bool:
		if t {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case float64:
		return appendMsgpackNumber(b, t)
	case string:
		return appendMsgpackString(b, t)
	case []any:
		b = appendCollectionHeader(b, len(t), 0x90, 0xdc, 0xdd)
		for _, x := range t {
			b = appendMsgpack(b, x)
		}
		return b
	case *jsObject:
		keys := t.order()
		b = appendCollectionHeader(b, len(keys), 0x80, 0xde, 0xdf)
		for _, k := range keys {
			b = appendMsgpackString(b, k)
			b = appendMsgpack(b, t.vals[k])
		}
		return b
	}
	return b
}

func appendMsgpackNumber(b []byte, f float64) []byte {
	isNegZero := f == 0 && math.Signbit(f)
	switch {
	case !isNegZero && f >= 0 && f <= math.MaxUint32 && f == math.Trunc(f):
		u := uint32(f)
		switch {
		case u < 0x80:
			return append(b, byte(u))
		case u < 0x100:
			return append(b, 0xcc, byte(u))
		case u < 0x10000:
			return append(b, 0xcd, byte(u>>8), byte(u))
		default:
			return append(b, 0xce, byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
		}
	case f < 0 && f >= -0x80000000 && f == math.Trunc(f):
		i := int32(f)
		switch {
		case i >= -0x20:
			return append(b, byte(i))
		case i >= -0x80:
			return append(b, 0xd0, byte(i))
		case i >= -0x8000:
			return append(b, 0xd1, byte(i>>8), byte(i))
		default:
			return append(b, 0xd2, byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
		}
	}
	u := math.Float64bits(f)
	return append(b, 0xcb, byte(u>>56), byte(u>>48), byte(u>>40), byte(u>>32), byte(u>>24), byte(u>>16), byte(u>>8), byte(u))
}

func appendMsgpackString(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 0x20:
		b = append(b, 0xa0|byte(n))
	case n < 0x100:
		b = append(b, 0xd9, byte(n))
	case n < 0x10000:
		b = append(b, 0xda, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, s...)
}

func appendCollectionHeader(b []byte, n int, fixed, m16, m32 byte) []byte {
	switch {
	case n < 0x10:
		return append(b, fixed|byte(n))
	case n < 0x10000:
		return append(b, m16, byte(n>>8), byte(n))
	default:
		return append(b, m32, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// msgpackDecoder is Bytes.ts decodeJsonValue.
type msgpackDecoder struct {
	b     []byte
	depth int
}

func (d *msgpackDecoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)) {
		//lint:ignore ST1005 msgpackr's own message, which the TS side reports
		return nil, errors.New("Buffer parse ended prematurely")
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p, nil
}

func (d *msgpackDecoder) uint(n int) (uint64, error) {
	p, err := d.take(uint64(n))
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

func (d *msgpackDecoder) value() (any, error) {
	mb, err := d.take(1)
	if err != nil {
		return nil, err
	}
	m := mb[0]
	switch {
	case m <= 0x7f:
		return float64(m), nil
	case m <= 0x8f:
		return d.mapOf(uint64(m - 0x80))
	case m <= 0x9f:
		return d.array(uint64(m - 0x90))
	case m <= 0xbf:
		return d.str(uint64(m - 0xa0))
	case m >= 0xe0:
		return float64(int8(m)), nil
	}
	switch m {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xca, 0xcb:
		n := 4
		if m == 0xcb {
			n = 8
		}
		u, err := d.uint(n)
		if err != nil {
			return nil, err
		}
		f := math.Float64frombits(u)
		if n == 4 {
			f = float64(math.Float32frombits(uint32(u)))
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errors.New("a decoded JSON number must be finite")
		}
		return f, nil
	case 0xcc, 0xcd, 0xce:
		u, err := d.uint(1 << (m - 0xcc))
		return float64(u), err
	case 0xd0:
		u, err := d.uint(1)
		return float64(int8(u)), err
	case 0xd1:
		u, err := d.uint(2)
		return float64(int16(u)), err
	case 0xd2:
		u, err := d.uint(4)
		return float64(int32(u)), err
	case 0xd9, 0xda, 0xdb:
		n, err := d.uint(1 << (m - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.str(n)
	case 0xdc, 0xdd:
		n, err := d.uint(2 << (m - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.array(n)
	case 0xde, 0xdf:
		n, err := d.uint(2 << (m - 0xde))
		if err != nil {
			return nil, err
		}
		return d.mapOf(n)
	}
	return nil, fmt.Errorf("unsupported MessagePack marker 0x%02x", m)
}

func (d *msgpackDecoder) str(n uint64) (any, error) {
	p, err := d.take(n)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(p) {
		return nil, errors.New("invalid UTF-8 in MessagePack string")
	}
	return string(p), nil
}

func (d *msgpackDecoder) enter() error {
	if d.depth >= maxJSONDepth {
		return errors.New("JSON nesting too deep")
	}
	d.depth++
	return nil
}

func (d *msgpackDecoder) array(n uint64) (any, error) {
	if n > uint64(len(d.b)) {
		//lint:ignore ST1005 msgpackr's own message, which the TS side reports
		return nil, errors.New("Buffer parse ended prematurely")
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	arr := make([]any, n)
	for i := range arr {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		arr[i] = v
	}
	d.depth--
	return arr, nil
}

func (d *msgpackDecoder) mapOf(n uint64) (any, error) {
	if n > uint64(len(d.b))/2 {
		//lint:ignore ST1005 msgpackr's own message, which the TS side reports
		return nil, errors.New("Buffer parse ended prematurely")
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	obj := &jsObject{vals: map[string]any{}}
	for range n {
		kv, err := d.value()
		if err != nil {
			return nil, err
		}
		k, ok := kv.(string)
		if !ok {
			return nil, errors.New("a decoded JSON object key must be a string")
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		obj.set(k, v)
	}
	d.depth--
	return obj, nil
}
