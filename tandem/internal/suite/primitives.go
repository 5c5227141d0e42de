package suite

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
)

// H is SHA-256 over the concatenation of parts (§5.2).
func H(parts ...[]byte) [32]byte {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// KDF is HKDF-SHA-256 (RFC 5869): extract with salt (an empty salt is the
// RFC's zero salt), expand with the ASCII label info to n bytes (§5.2).
//
// n must be between 1 and 255*32; KDF panics otherwise, since every caller
// in the protocol passes a fixed length.
func KDF(ikm, salt []byte, info string, n int) []byte {
	out, err := hkdf.Key(sha256.New, ikm, salt, info, n)
	if err != nil {
		panic(fmt.Sprintf("suite: KDF length %d: %v", n, err))
	}
	return out
}

func kdf32(ikm, salt []byte, info string) [32]byte {
	return [32]byte(KDF(ikm, salt, info, 32))
}

// b32 is RFC 4648 base32 with the lowercase alphabet and no padding.
var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// B32 encodes x as b32(x) (§5.2): lowercase, no padding.
func B32(x []byte) string { return b32.EncodeToString(x) }

// ParseB32 reads B32's form, in its one canonical spelling only.
func ParseB32(s string) ([]byte, error) {
	b, err := b32.DecodeString(s)
	if err != nil {
		return nil, err
	}
	if b32.EncodeToString(b) != s {
		return nil, errors.New("suite: not canonical b32")
	}
	return b, nil
}

// tag20 is b32(KDF(ikm, salt, info, 20)): a 32-character channel tag (§5.6).
func tag20(ikm, salt []byte, info string) string {
	return B32(KDF(ikm, salt, info, 20))
}

// appendLP appends lp(x) = u32(len(x)) || x.
func appendLP(b, x []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
	return append(b, x...)
}
