package tjson

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts.
const MaxDepth = 256

// Kind is the JSON type of a Value.
type Kind uint8

// The JSON types.
const (
	KindNull Kind = iota + 1
	KindBool
	KindNumber
	KindString
	KindArray
	KindObject
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindBool:
		return "boolean"
	case KindNumber:
		return "number"
	case KindString:
		return "string"
	case KindArray:
		return "array"
	case KindObject:
		return "object"
	}
	return "invalid"
}

// Value is one validated JSON value. Object members keep their order.
type Value struct {
	off     int
	raw     []byte
	s       string // unescaped string, or a number's literal
	elems   []Value
	members []Member
	kind    Kind // kind and b last, side by side: a tree holds many Values
	b       bool
}

// Member is one member of an object.
type Member struct {
	Name  string
	Value Value
}

type parser struct {
	data  []byte
	pos   int
	depth int
	// members and elems are scratch stacks: an object or array collects
	// its children on top and keeps an exactly sized copy when it closes,
	// one allocation per container however many children it has.
	members []Member
	elems   []Value
}

// smallObject is how many members an object may have before its
// duplicate check uses a map rather than comparing names one by one.
const smallObject = 16

// dupName reports whether name is already among the open object's members
// (those on the stack from start), or in seen, once the object is large.
func (p *parser) dupName(start int, name string, seen map[string]struct{}) bool {
	if seen != nil {
		_, dup := seen[name]
		return dup
	}
	for _, m := range p.members[start:] {
		if m.Name == name {
			return true
		}
	}
	return false
}

// Parse validates data as exactly one JSON value under the rules of §10.5
// (see the package doc) and returns it. Integer and type rules, which depend
// on a schema, are applied by Unmarshal and the Value accessors.
func Parse(data []byte) (Value, error) {
	// The scratch stacks start at the size a record payload needs, so
	// that they are allocated once instead of growing step by step.
	p := &parser{data: data, members: make([]Member, 0, 16), elems: make([]Value, 0, 16)}
	p.space()
	v, err := p.value()
	if err != nil {
		return Value{}, err
	}
	p.space()
	if p.pos != len(data) {
		return Value{}, p.fail(ErrTrailingData, "")
	}
	return v, nil
}

// Valid returns nil if data is one JSON value that passes the schema-free
// checks of §10.5, or the *Error saying why not.
func Valid(data []byte) error {
	_, err := Parse(data)
	return err
}

func (p *parser) fail(reason error, format string, args ...any) error {
	return &Error{Reason: reason, Offset: p.pos, Detail: fmt.Sprintf(format, args...)}
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (Value, error) {
	if p.pos >= len(p.data) {
		return Value{}, p.fail(ErrSyntax, "unexpected end of input")
	}
	start := p.pos
	var v Value
	var err error
	switch c := p.data[p.pos]; {
	case c == '{':
		v, err = p.object()
	case c == '[':
		v, err = p.array()
	case c == '"':
		var s string
		s, err = p.str()
		v = Value{kind: KindString, s: s}
	case c == '-' || c >= '0' && c <= '9':
		v, err = p.number()
	case p.lit("true"):
		v = Value{kind: KindBool, b: true}
	case p.lit("false"):
		v = Value{kind: KindBool}
	case p.lit("null"):
		v = Value{kind: KindNull}
	default:
		return Value{}, p.fail(ErrSyntax, "unexpected byte %q", c)
	}
	if err != nil {
		return Value{}, err
	}
	v.off = start
	v.raw = p.data[start:p.pos:p.pos]
	return v, nil
}

func (p *parser) lit(s string) bool {
	if len(p.data)-p.pos >= len(s) && string(p.data[p.pos:p.pos+len(s)]) == s {
		p.pos += len(s)
		return true
	}
	return false
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.fail(ErrDepth, "more than %d levels", MaxDepth)
	}
	return nil
}

func (p *parser) object() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.pos++ // '{'
	v := Value{kind: KindObject}
	start := len(p.members)
	defer func() { clear(p.members[start:]); p.members = p.members[:start] }()
	var seen map[string]struct{} // from smallObject members on
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return v, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return Value{}, p.fail(ErrSyntax, "expected a member name")
		}
		nameOff := p.pos
		name, err := p.str()
		if err != nil {
			return Value{}, err
		}
		if p.dupName(start, name, seen) {
			return Value{}, &Error{Reason: ErrDuplicateName, Offset: nameOff, Detail: strconv.Quote(name)}
		}
		if n := len(p.members) - start; n >= smallObject {
			if seen == nil {
				seen = make(map[string]struct{}, 2*n)
				for _, m := range p.members[start:] {
					seen[m.Name] = struct{}{}
				}
			}
			seen[name] = struct{}{}
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return Value{}, p.fail(ErrSyntax, "expected ':'")
		}
		p.pos++
		p.space()
		mv, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.members = append(p.members, Member{Name: name, Value: mv})
		p.space()
		if p.pos >= len(p.data) {
			return Value{}, p.fail(ErrSyntax, "unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			v.members = append([]Member(nil), p.members[start:]...)
			return v, nil
		default:
			return Value{}, p.fail(ErrSyntax, "expected ',' or '}'")
		}
	}
}

func (p *parser) array() (Value, error) {
	if err := p.enter(); err != nil {
		return Value{}, err
	}
	p.pos++ // '['
	v := Value{kind: KindArray}
	start := len(p.elems)
	defer func() { clear(p.elems[start:]); p.elems = p.elems[:start] }()
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return v, nil
	}
	for {
		p.space()
		ev, err := p.value()
		if err != nil {
			return Value{}, err
		}
		p.elems = append(p.elems, ev)
		p.space()
		if p.pos >= len(p.data) {
			return Value{}, p.fail(ErrSyntax, "unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			v.elems = append([]Value(nil), p.elems[start:]...)
			return v, nil
		default:
			return Value{}, p.fail(ErrSyntax, "expected ',' or ']'")
		}
	}
}

// number checks the RFC 8259 number grammar and keeps the literal:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (Value, error) {
	start := p.pos
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case p.pos < len(d) && d[p.pos] >= '1' && d[p.pos] <= '9':
		p.digits()
	default:
		return Value{}, p.fail(ErrSyntax, "bad number")
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if p.digits() == 0 {
			return Value{}, p.fail(ErrSyntax, "bad fraction")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return Value{}, p.fail(ErrSyntax, "bad exponent")
		}
	}
	return Value{kind: KindNumber, s: string(d[start:p.pos])}, nil
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

// str reads a string starting at '"' and returns it unescaped. Raw bytes
// must be valid UTF-8 (which excludes encoded surrogates); \u escapes of
// surrogates must form pairs.
func (p *parser) str() (string, error) {
	p.pos++ // '"'
	start := p.pos
	d := p.data
	// Fast path: no escapes.
	for p.pos < len(d) {
		c := d[p.pos]
		if c == '"' {
			seg := d[start:p.pos]
			if !utf8.Valid(seg) {
				return "", p.failAt(ErrInvalidUTF8, start+invalidAt(seg))
			}
			p.pos++
			return string(seg), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.fail(ErrSyntax, "control character in string")
		}
		p.pos++
	}
	if p.pos >= len(d) {
		return "", p.fail(ErrSyntax, "unterminated string")
	}
	buf := append([]byte(nil), d[start:p.pos]...)
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return "", p.failAt(ErrInvalidUTF8, start)
			}
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.fail(ErrSyntax, "control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++ // '\\'
		if p.pos >= len(d) {
			break
		}
		e := d[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, err := p.escapedRune()
			if err != nil {
				return "", err
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.fail(ErrSyntax, "bad escape \\%c", e)
		}
	}
	return "", p.fail(ErrSyntax, "unterminated string")
}

// escapedRune reads the XXXX of \uXXXX (and a following \uYYYY low
// surrogate when XXXX is a high one).
func (p *parser) escapedRune() (rune, error) {
	at := p.pos - 2
	r, ok := p.hex4()
	if !ok {
		return 0, p.fail(ErrSyntax, "bad \\u escape")
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r >= 0xdc00 { // low surrogate first
		return 0, p.failAt(ErrLoneSurrogate, at)
	}
	if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		p.pos += 2
		lo, ok := p.hex4()
		if !ok {
			return 0, p.fail(ErrSyntax, "bad \\u escape")
		}
		if lo >= 0xdc00 && lo <= 0xdfff {
			return utf16.DecodeRune(r, lo), nil
		}
	}
	return 0, p.failAt(ErrLoneSurrogate, at)
}

func (p *parser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *parser) failAt(reason error, off int) error {
	return &Error{Reason: reason, Offset: off}
}

func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}
