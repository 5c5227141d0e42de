package changecodec

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
