package tjson

import (
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Unmarshaler is implemented by types that decode themselves from a
// validated Value. Errors should be *Error values or wrap ErrInvalid.
type Unmarshaler interface {
	UnmarshalTJSON(v Value) error
}

// Unmarshal validates data strictly (§10.5, see the package doc) and then
// decodes it into the value v points to. On any error v is left unchanged:
// a text is rejected whole. On success *v is replaced entirely, so members
// absent from the text leave zero values.
func Unmarshal(data []byte, v any) error {
	root, err := Parse(data)
	if err != nil {
		return err
	}
	return decodeInto(root, v)
}

func decodeInto(root Value, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("tjson: Unmarshal needs a non-nil pointer, not %T", v)
	}
	tmp := reflect.New(rv.Elem().Type())
	if err := decodeValue(root, tmp.Elem(), nil); err != nil {
		return err
	}
	rv.Elem().Set(tmp.Elem())
	return nil
}

var (
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	valueType       = reflect.TypeFor[Value]()
)

// pathSeg is where a decoder is in the text, for errors: one member name
// or array index below up (nil: the root). The decoders pass it down and
// spell it out only for an error, so a text that decodes costs no strings.
type pathSeg struct {
	up    *pathSeg
	name  string
	index int // when elem
	elem  bool
}

func (p *pathSeg) member(name string) *pathSeg { return &pathSeg{up: p, name: name} }
func (p *pathSeg) at(i int) *pathSeg           { return &pathSeg{up: p, index: i, elem: true} }

// String spells p out: ".writes[2].v", "" for the root.
func (p *pathSeg) String() string {
	if p == nil {
		return ""
	}
	if p.elem {
		return p.up.String() + "[" + strconv.Itoa(p.index) + "]"
	}
	return p.up.String() + "." + p.name
}

func withPath(err error, path *pathSeg) error {
	if e, ok := err.(*Error); ok && e.Path == "" {
		e.Path = path.String()
		if e.Path == "" {
			e.Path = "."
		}
	}
	return err
}

// decodeValue decodes j into the settable rv.
func decodeValue(j Value, rv reflect.Value, path *pathSeg) error {
	if rv.CanAddr() && rv.Addr().Type().Implements(unmarshalerType) {
		return withPath(rv.Addr().Interface().(Unmarshaler).UnmarshalTJSON(j), path)
	}
	if rv.Type() == valueType {
		rv.Set(reflect.ValueOf(j))
		return nil
	}
	switch rv.Kind() {
	case reflect.Interface:
		if rv.NumMethod() != 0 {
			return fmt.Errorf("tjson: cannot decode into %s", rv.Type())
		}
		if g := generic(j); g != nil {
			rv.Set(reflect.ValueOf(g))
		} else {
			rv.SetZero() // null: reflect.ValueOf(nil) cannot be set
		}
		return nil
	case reflect.Pointer:
		if j.kind == KindNull {
			return withPath(&Error{Reason: ErrType, Offset: j.off, Detail: "null where a value belongs"}, path)
		}
		p := reflect.New(rv.Type().Elem())
		if err := decodeValue(j, p.Elem(), path); err != nil {
			return err
		}
		rv.Set(p)
		return nil
	case reflect.Bool:
		b, err := j.Bool()
		if err != nil {
			return withPath(err, path)
		}
		rv.SetBool(b)
	case reflect.String:
		s, err := j.Str()
		if err != nil {
			return withPath(err, path)
		}
		rv.SetString(s)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := j.Uint()
		if err != nil {
			return withPath(err, path)
		}
		if rv.OverflowUint(n) {
			return withPath(j.intErr("too large for "+rv.Type().String()), path)
		}
		rv.SetUint(n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := j.Int()
		if err != nil {
			return withPath(err, path)
		}
		if rv.OverflowInt(n) {
			return withPath(j.intErr("out of range for "+rv.Type().String()), path)
		}
		rv.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := j.Float()
		if err != nil {
			return withPath(err, path)
		}
		rv.SetFloat(f)
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b, err := bytesOf(j, -1)
			if err != nil {
				return withPath(err, path)
			}
			rv.SetBytes(b)
			return nil
		}
		return decodeSlice(j, rv, path)
	case reflect.Array:
		return decodeArray(j, rv, path)
	case reflect.Map:
		return decodeMap(j, rv, path)
	case reflect.Struct:
		return decodeStruct(j, rv, path)
	default:
		return fmt.Errorf("tjson: cannot decode into %s", rv.Type())
	}
	return nil
}

func decodeSlice(j Value, rv reflect.Value, path *pathSeg) error {
	elems, err := j.Elems()
	if err != nil {
		return withPath(err, path)
	}
	s := reflect.MakeSlice(rv.Type(), len(elems), len(elems))
	for i, e := range elems {
		if err := decodeValue(e, s.Index(i), path.at(i)); err != nil {
			return err
		}
	}
	rv.Set(s)
	return nil
}

func decodeArray(j Value, rv reflect.Value, path *pathSeg) error {
	if rv.Type().Elem().Kind() == reflect.Uint8 {
		b, err := bytesOf(j, rv.Len())
		if err != nil {
			return withPath(err, path)
		}
		reflect.Copy(rv, reflect.ValueOf(b))
		return nil
	}
	elems, err := j.Elems()
	if err != nil {
		return withPath(err, path)
	}
	if len(elems) != rv.Len() {
		return withPath(&Error{Reason: ErrType, Offset: j.off,
			Detail: fmt.Sprintf("want %d elements, have %d", rv.Len(), len(elems))}, path)
	}
	for i, e := range elems {
		if err := decodeValue(e, rv.Index(i), path.at(i)); err != nil {
			return err
		}
	}
	return nil
}

func decodeMap(j Value, rv reflect.Value, path *pathSeg) error {
	if rv.Type().Key().Kind() != reflect.String {
		return fmt.Errorf("tjson: cannot decode into %s", rv.Type())
	}
	members, err := j.Members()
	if err != nil {
		return withPath(err, path)
	}
	m := reflect.MakeMapWithSize(rv.Type(), len(members))
	for _, mem := range members {
		ev := reflect.New(rv.Type().Elem()).Elem()
		if err := decodeValue(mem.Value, ev, path.member(mem.Name)); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(mem.Name).Convert(rv.Type().Key()), ev)
	}
	rv.Set(m)
	return nil
}

func decodeStruct(j Value, rv reflect.Value, path *pathSeg) error {
	if _, err := j.Members(); err != nil {
		return withPath(err, path)
	}
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, required, skip := fieldName(f)
		if skip {
			continue
		}
		mv, ok := j.Get(name)
		if !ok {
			if required {
				return &Error{Reason: ErrMissing, Offset: j.off, Path: path.member(name).String()}
			}
			continue
		}
		if err := decodeValue(mv, rv.Field(i), path.member(name)); err != nil {
			return err
		}
	}
	return nil
}

// fieldName reads the member name from the `json:"name"` tag (untagged
// fields use the Go name) and requiredness from a tag key of its own,
// `tjson:"required"`, so the standard library's json options stay its own.
func fieldName(f reflect.StructField) (name string, required, skip bool) {
	required = f.Tag.Get("tjson") == "required"
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return f.Name, required, false
	}
	if tag == "-" {
		return "", false, true
	}
	name, _, _ = strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, required, false
}

// generic converts j to map[string]any, []any, string, bool, nil, or a
// NumberLiteral.
func generic(j Value) any {
	switch j.kind {
	case KindObject:
		m := make(map[string]any, len(j.members))
		for _, mem := range j.members {
			m[mem.Name] = generic(mem.Value)
		}
		return m
	case KindArray:
		a := make([]any, len(j.elems))
		for i, e := range j.elems {
			a[i] = generic(e)
		}
		return a
	case KindString:
		return j.s
	case KindBool:
		return j.b
	case KindNumber:
		return NumberLiteral(j.s)
	}
	return nil
}

// NumberLiteral is a JSON number's literal, as decoded into an interface value.
type NumberLiteral string

// b64u is RFC 4648 §5 base64url without padding, rejecting padding, the
// standard alphabet and non-zero trailing bits.
var b64u = base64.RawURLEncoding.Strict()

// B64U encodes b as b64u (no padding).
func B64U(b []byte) string { return b64u.EncodeToString(b) }

// DecodeB64U decodes a b64u string strictly; errors match ErrInvalid and ErrBytes.
func DecodeB64U(s string) ([]byte, error) {
	b, err := decodeB64U(s)
	if err != nil {
		return nil, &Error{Reason: ErrBytes, Offset: -1, Detail: err.Error()}
	}
	return b, nil
}

// errB64UNewline reports a CR or LF inside a b64u string. encoding/base64
// skips both even in strict mode, which would give one byte string two
// spellings; the gaps file's one reading of JSON allows exactly one.
var errB64UNewline = errors.New("b64u string contains CR or LF")

// decodeB64U is the only b64u decoder of this package: strict base64url
// without padding, zero trailing bits, and no CR or LF.
func decodeB64U(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errB64UNewline
	}
	return b64u.DecodeString(s)
}

// bytesOf decodes a b64u string value; n ≥ 0 demands exactly n bytes.
func bytesOf(j Value, n int) ([]byte, error) {
	s, err := j.Str()
	if err != nil {
		return nil, err
	}
	b, err := decodeB64U(s)
	if err != nil {
		return nil, &Error{Reason: ErrBytes, Offset: j.off, Detail: err.Error()}
	}
	if n >= 0 && len(b) != n {
		return nil, &Error{Reason: ErrBytes, Offset: j.off, Detail: fmt.Sprintf("want %d bytes, have %d", n, len(b))}
	}
	return b, nil
}

// Bytes is a byte string carried in JSON as b64u (§10.5). It marshals with
// encoding/json as a b64u string and unmarshals strictly with this package.
type Bytes []byte

// UnmarshalTJSON implements Unmarshaler.
func (b *Bytes) UnmarshalTJSON(v Value) error {
	x, err := bytesOf(v, -1)
	if err != nil {
		return err
	}
	*b = x
	return nil
}

// MarshalJSON encodes b as a b64u JSON string.
func (b Bytes) MarshalJSON() ([]byte, error) {
	return []byte(`"` + b64u.EncodeToString(b) + `"`), nil
}
