package client

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file reproduces what the Json value type of @evolu/common needs from
// JavaScript: JSON.parse into objects whose keys follow JavaScript property
// order, JSON.stringify, Number.prototype.toString, and the MessagePack
// subset of Bytes.ts encodeJsonValue/decodeJsonValue
// (docs/decisions/evolu-json-values.md).

// jsObject is a JavaScript object: keys in insertion order, a repeated key
// keeping its first position and its last value.
type jsObject struct {
	keys []string
	vals map[string]any
}

func (o *jsObject) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// isArrayIndex reports whether k is a canonical array index, which
// JavaScript orders before other keys, ascending.
func isArrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= 1<<32-1 {
		return 0, false
	}
	return n, true
}

// order returns the keys in JavaScript property order.
func (o *jsObject) order() []string {
	var idx, rest []string
	for _, k := range o.keys {
		if _, ok := isArrayIndex(k); ok {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	slices.SortFunc(idx, func(a, b string) int {
		x, _ := isArrayIndex(a)
		y, _ := isArrayIndex(b)
		return cmp.Compare(x, y)
	})
	return append(idx, rest...)
}

// parseJSON parses s as JSON.parse does: nil, bool, float64, string, []any,
// *jsObject.
func parseJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := parseJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

const maxJSONDepth = 1000

func parseJSONValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, errors.New("JSON nesting too deep")
		}
		if t == '[' {
			arr := []any{}
			for dec.More() {
				v, err := parseJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		obj := &jsObject{vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := parseJSONValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj.set(k, v)
		}
		_, err := dec.Token()
		return obj, err
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return f, nil
	default:
		return t, nil // nil, bool, string
	}
}

// stringifyJSON is JSON.stringify of a parsed value.
func stringifyJSON(v any) string {
	var b strings.Builder
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			b.WriteString("null")
		} else {
			b.WriteString(jsNumberString(t))
		}
	case string:
		writeJSONString(b, t)
	case []any:
		b.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, x)
		}
		b.WriteByte(']')
	case *jsObject:
		b.WriteByte('{')
		for i, k := range t.order() {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSON(b, t.vals[k])
		}
		b.WriteByte('}')
	}
}

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// jsNumberString is Number.prototype.toString() of a finite f.
func jsNumberString(f float64) string {
	if f == 0 {
		return "0"
	}
	neg := f < 0
	e := strconv.FormatFloat(math.Abs(f), 'e', -1, 64) // d.ddde±xx
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		sign := "+"
		if n-1 < 0 {
			sign = "-"
		}
		m := digits[:1]
		if k > 1 {
			m += "." + digits[1:]
		}
		s = m + "e" + sign + strconv.Itoa(abs(n-1))
	}
	if neg {
		s = "-" + s
	}
	return s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

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

var errMsgpack = errors.New("invalid MessagePack data")

func (d *msgpackDecoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)) {
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

// jsonToMsgpack returns the MessagePack of s when s is JSON that survives
// JSON.parse and JSON.stringify unchanged, as the Json value type requires.
func jsonToMsgpack(s string) ([]byte, bool) {
	if !utf8.ValidString(s) || strings.Contains(s, `\u`) && hasSurrogateEscape(s) {
		return nil, false
	}
	v, err := parseJSON(s)
	if err != nil || stringifyJSON(v) != s {
		return nil, false
	}
	return appendMsgpack(nil, v), true
}

// hasSurrogateEscape reports a \uD800-\uDFFF escape, which Go's decoder
// would replace; such strings are left to the String type.
func hasSurrogateEscape(s string) bool {
	for i := 0; i+6 <= len(s); i++ {
		if s[i] == '\\' && s[i+1] == 'u' {
			if n, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil && utf16.IsSurrogate(rune(n)) {
				return true
			}
		}
	}
	return false
}

// msgpackToJSON decodes one MessagePack value filling p exactly and
// returns its JSON.stringify.
func msgpackToJSON(p []byte) (string, error) {
	d := msgpackDecoder{b: p}
	v, err := d.value()
	if err != nil {
		return "", err
	}
	if len(d.b) != 0 {
		return "", errors.New("invalid JSON MessagePack length")
	}
	return stringifyJSON(v), nil
}
