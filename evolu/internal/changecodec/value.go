package changecodec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// A Value is a SqliteValue: nil, string, float64 (every JavaScript number),
// or []byte.
type Value = any

// Value type tags (Protocol.ts ProtocolValueType). Tags 0-19 are the small
// integers themselves.
const (
	tagString                     = 20
	tagNumber                     = 21
	tagNull                       = 22
	tagBytes                      = 23
	tagNonNegativeInt             = 30
	tagEmptyString                = 31
	tagBase64URL                  = 32
	tagID                         = 33
	tagJSON                       = 34
	tagDateIsoNonNegative         = 35
	tagDateIsoNegative            = 36
	smallIntLimit                 = 20
	dateIsoLayout                 = "2006-01-02T15:04:05.000Z"
	maxJSDateMillis               = 8.64e15
	maxSafeInteger        float64 = protocol.MaxNonNegativeInt
)

// appendValue appends v as encodeSqliteValue does. Strings are classified
// in the TS order: empty, DateIso, Id, Json, Base64Url, other.
func appendValue(b []byte, v Value) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return protocol.AppendNonNegativeInt(b, tagNull), nil
	case string:
		return appendStringValue(b, t), nil
	case float64:
		return appendNumberValue(b, t)
	case int:
		return appendNumberValue(b, float64(t))
	case []byte:
		b = protocol.AppendNonNegativeInt(b, tagBytes)
		b = protocol.AppendNonNegativeInt(b, uint64(len(t)))
		return append(b, t...), nil
	}
	return nil, fmt.Errorf("evolu: unsupported value type %T", v)
}

func appendNumberValue(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("evolu: a number value must be finite")
	}
	if !(f == 0 && math.Signbit(f)) && f >= 0 && f <= maxSafeInteger && f == math.Trunc(f) {
		if f < smallIntLimit {
			return protocol.AppendNonNegativeInt(b, uint64(f)), nil
		}
		b = protocol.AppendNonNegativeInt(b, tagNonNegativeInt)
		return protocol.AppendNonNegativeInt(b, uint64(f)), nil
	}
	b = protocol.AppendNonNegativeInt(b, tagNumber)
	return appendMsgpackNumber(b, f), nil
}

func appendStringValue(b []byte, s string) []byte {
	if s == "" {
		return protocol.AppendNonNegativeInt(b, tagEmptyString)
	}
	if ms, ok := parseDateIso(s); ok {
		if ms >= 0 {
			b = protocol.AppendNonNegativeInt(b, tagDateIsoNonNegative)
			return protocol.AppendNonNegativeInt(b, uint64(ms))
		}
		b = protocol.AppendNonNegativeInt(b, tagDateIsoNegative)
		return appendMsgpackNumber(b, float64(ms))
	}
	if id, err := protocol.ParseID(s); err == nil {
		b = protocol.AppendNonNegativeInt(b, tagID)
		return append(b, id[:]...)
	}
	if mp, ok := jsonToMsgpack(s); ok {
		b = protocol.AppendNonNegativeInt(b, tagJSON)
		b = protocol.AppendNonNegativeInt(b, uint64(len(mp)))
		return append(b, mp...)
	}
	if raw, ok := parseBase64URL(s); ok {
		b = protocol.AppendNonNegativeInt(b, tagBase64URL)
		b = protocol.AppendNonNegativeInt(b, uint64(len(raw)))
		return append(b, raw...)
	}
	b = protocol.AppendNonNegativeInt(b, tagString)
	b = protocol.AppendNonNegativeInt(b, uint64(len(s)))
	return append(b, s...)
}

// parseDateIso accepts the canonical 24-character toISOString form.
func parseDateIso(s string) (int64, bool) {
	if len(s) != 24 || s[23] != 'Z' {
		return 0, false
	}
	t, err := time.Parse(dateIsoLayout, s)
	if err != nil || t.Format(dateIsoLayout) != s {
		return 0, false
	}
	return t.UnixMilli(), true
}

func formatDateIso(ms float64) (string, error) {
	if math.IsNaN(ms) || math.Abs(ms) > maxJSDateMillis || ms != math.Trunc(ms) {
		return "", errors.New("invalid date")
	}
	t := time.UnixMilli(int64(ms)).UTC()
	if t.Year() < 0 || t.Year() > 9999 {
		return "", errors.New("date outside DateIso")
	}
	return t.Format(dateIsoLayout), nil
}

// parseBase64URL accepts the canonical unpadded base64url encoding.
func parseBase64URL(s string) ([]byte, bool) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || base64.RawURLEncoding.EncodeToString(raw) != s {
		return nil, false
	}
	return raw, true
}

// valueDecoder reads values of a decrypted change.
type valueDecoder struct{ b []byte }

var errTruncated = errors.New("unexpected end of data")

func (d *valueDecoder) varint() (uint64, error) {
	var v uint64
	for i := 0; i < 8; i++ {
		if len(d.b) == 0 {
			return 0, errTruncated
		}
		c := d.b[0]
		d.b = d.b[1:]
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if v > protocol.MaxNonNegativeInt {
				return 0, errors.New("decoded integer is not a safe integer")
			}
			return v, nil
		}
	}
	return 0, errors.New("variable-length quantity must terminate within 8 bytes")
}

func (d *valueDecoder) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)) {
		return nil, errTruncated
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p, nil
}

func (d *valueDecoder) lengthPrefixed() ([]byte, error) {
	n, err := d.varint()
	if err != nil {
		return nil, err
	}
	return d.bytes(n)
}

func (d *valueDecoder) string() (string, error) {
	p, err := d.lengthPrefixed()
	if err != nil {
		return "", err
	}
	if !utf8.Valid(p) {
		// TextDecoder replaces invalid sequences; Go strings keep bytes, so
		// reject rather than guess.
		return "", errors.New("invalid UTF-8 string")
	}
	return string(p), nil
}

func (d *valueDecoder) number() (float64, error) {
	m := msgpackDecoder{b: d.b}
	v, err := m.value()
	if err != nil {
		return 0, err
	}
	f, ok := v.(float64)
	if !ok {
		return 0, errors.New("expected an encoded number")
	}
	d.b = m.b
	return f, nil
}

// value is decodeSqliteValue.
func (d *valueDecoder) value() (Value, error) {
	tag, err := d.varint()
	if err != nil {
		return nil, err
	}
	if tag < smallIntLimit {
		return float64(tag), nil
	}
	switch tag {
	case tagString:
		return d.string()
	case tagNumber:
		return d.number()
	case tagNull:
		return nil, nil
	case tagBytes:
		p, err := d.lengthPrefixed()
		if err != nil {
			return nil, err
		}
		return append([]byte{}, p...), nil
	case tagID:
		p, err := d.bytes(16)
		if err != nil {
			return nil, err
		}
		return protocol.ID(p).String(), nil
	case tagNonNegativeInt:
		n, err := d.varint()
		return float64(n), err
	case tagJSON:
		p, err := d.lengthPrefixed()
		if err != nil {
			return nil, err
		}
		return msgpackToJSON(p)
	case tagDateIsoNonNegative:
		n, err := d.varint()
		if err != nil {
			return nil, err
		}
		return formatDateIso(float64(n))
	case tagDateIsoNegative:
		f, err := d.number()
		if err != nil {
			return nil, err
		}
		return formatDateIso(f)
	case tagEmptyString:
		return "", nil
	case tagBase64URL:
		p, err := d.lengthPrefixed()
		if err != nil {
			return nil, err
		}
		return base64.RawURLEncoding.EncodeToString(p), nil
	}
	return nil, fmt.Errorf("invalid ProtocolValueType %d", tag)
}
