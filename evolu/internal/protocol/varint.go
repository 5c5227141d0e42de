package protocol

import "errors"

// MaxNonNegativeInt is the largest NonNegativeInt: JavaScript's
// Number.MAX_SAFE_INTEGER (2^53-1).
const MaxNonNegativeInt = 1<<53 - 1

// maxVarintBytes is the longest NonNegativeInt encoding the TS decoder reads.
const maxVarintBytes = 8

// AppendNonNegativeInt appends v as the TS encodeNonNegativeInt does:
// little-endian groups of 7 bits, the high bit set on every byte but the
// last. v must not exceed MaxNonNegativeInt.
func AppendNonNegativeInt(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// nonNegativeIntLen is the encoded length of v.
func nonNegativeIntLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

var (
	errTruncated   = errors.New("unexpected end of data")
	errVarintLong  = errors.New("variable-length quantity must terminate within 8 bytes")
	errVarintRange = errors.New("decoded integer is not a safe integer")
)

// decoder reads a byte slice front to back. Every method returns an error
// instead of panicking on short or malformed input.
type decoder struct {
	b []byte
}

func (d *decoder) remaining() int { return len(d.b) }

func (d *decoder) byte() (byte, error) {
	if len(d.b) == 0 {
		return 0, errTruncated
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c, nil
}

func (d *decoder) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)) {
		return nil, errTruncated
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p, nil
}

// nonNegativeInt decodes a NonNegativeInt like the TS decodeNonNegativeInt:
// at most 8 bytes, and the value must be a safe integer.
func (d *decoder) nonNegativeInt() (uint64, error) {
	var v uint64
	for i := 0; i < maxVarintBytes; i++ {
		c, err := d.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > MaxNonNegativeInt {
				return 0, errVarintRange
			}
			return v, nil
		}
	}
	return 0, errVarintLong
}
