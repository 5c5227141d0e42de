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
	var d decoder
	if err := d.value(root, tmp.Elem()); err != nil {
		if e, ok := err.(*Error); ok && e.Path == "" {
			e.Path = "."
		}
		return err
	}
	rv.Elem().Set(tmp.Elem())
	return nil
}

var (
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	valueType       = reflect.TypeFor[Value]()
)

// decoder is one Unmarshal's state: the fields of each struct type it
// met (a payload decodes many values of a few types), so that reflection
// on a type's fields is done once per call, not once per value.
//
// Where an error happened is spelt out only for an error, as it returns
// through the decoders (under), so a text that decodes costs no strings.
type decoder struct {
	structs []structFields
}

type structFields struct {
	t      reflect.Type
	fields []fieldInfo
}

type fieldInfo struct {
	index    int
	name     string
	required bool
}

// fields lists the decoded fields of struct type t, in order.
func (d *decoder) fields(t reflect.Type) []fieldInfo {
	for _, sf := range d.structs {
		if sf.t == t {
			return sf.fields
		}
	}
	fs := make([]fieldInfo, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if name, required, skip := fieldName(f); !skip {
			fs = append(fs, fieldInfo{i, name, required})
		}
	}
	d.structs = append(d.structs, structFields{t, fs})
	return fs
}

// under puts err, which a decoder of the value at seg (".name" or "[i]")
// returned, under seg: an *Error's path grows by seg as it returns towards
// the root.
func under(err error, seg string) error {
	if e, ok := err.(*Error); ok {
		if e.Path == "." {
			e.Path = ""
		}
		e.Path = seg + e.Path
	}
	return err
}

func member(name string) string { return "." + name }
func index(i int) string        { return "[" + strconv.Itoa(i) + "]" }

// value decodes j into the settable rv.
func (d *decoder) value(j Value, rv reflect.Value) error {
	if rv.CanAddr() && rv.Addr().Type().Implements(unmarshalerType) {
		return rv.Addr().Interface().(Unmarshaler).UnmarshalTJSON(j)
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
			return &Error{Reason: ErrType, Offset: j.off, Detail: "null where a value belongs"}
		}
		p := reflect.New(rv.Type().Elem())
		if err := d.value(j, p.Elem()); err != nil {
			return err
		}
		rv.Set(p)
		return nil
	case reflect.Bool:
		b, err := j.Bool()
		if err != nil {
			return err
		}
		rv.SetBool(b)
	case reflect.String:
		s, err := j.Str()
		if err != nil {
			return err
		}
		rv.SetString(s)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := j.Uint()
		if err != nil {
			return err
		}
		if rv.OverflowUint(n) {
			return j.intErr("too large for " + rv.Type().String())
		}
		rv.SetUint(n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := j.Int()
		if err != nil {
			return err
		}
		if rv.OverflowInt(n) {
			return j.intErr("out of range for " + rv.Type().String())
		}
		rv.SetInt(n)
	case reflect.Float32, reflect.Float64:
		f, err := j.Float()
		if err != nil {
			return err
		}
		rv.SetFloat(f)
	case reflect.Slice:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b, err := bytesOf(j, -1)
			if err != nil {
				return err
			}
			rv.SetBytes(b)
			return nil
		}
		return d.slice(j, rv)
	case reflect.Array:
		return d.array(j, rv)
	case reflect.Map:
		return d.mapping(j, rv)
	case reflect.Struct:
		return d.structure(j, rv)
	default:
		return fmt.Errorf("tjson: cannot decode into %s", rv.Type())
	}
	return nil
}

func (d *decoder) slice(j Value, rv reflect.Value) error {
	elems, err := j.Elems()
	if err != nil {
		return err
	}
	s := reflect.MakeSlice(rv.Type(), len(elems), len(elems))
	for i, e := range elems {
		if err := d.value(e, s.Index(i)); err != nil {
			return under(err, index(i))
		}
	}
	rv.Set(s)
	return nil
}

func (d *decoder) array(j Value, rv reflect.Value) error {
	if rv.Type().Elem().Kind() == reflect.Uint8 {
		b, err := bytesOf(j, rv.Len())
		if err != nil {
			return err
		}
		reflect.Copy(rv, reflect.ValueOf(b))
		return nil
	}
	elems, err := j.Elems()
	if err != nil {
		return err
	}
	if len(elems) != rv.Len() {
		return &Error{Reason: ErrType, Offset: j.off,
			Detail: fmt.Sprintf("want %d elements, have %d", rv.Len(), len(elems))}
	}
	for i, e := range elems {
		if err := d.value(e, rv.Index(i)); err != nil {
			return under(err, index(i))
		}
	}
	return nil
}

func (d *decoder) mapping(j Value, rv reflect.Value) error {
	if rv.Type().Key().Kind() != reflect.String {
		return fmt.Errorf("tjson: cannot decode into %s", rv.Type())
	}
	members, err := j.Members()
	if err != nil {
		return err
	}
	m := reflect.MakeMapWithSize(rv.Type(), len(members))
	for _, mem := range members {
		ev := reflect.New(rv.Type().Elem()).Elem()
		if err := d.value(mem.Value, ev); err != nil {
			return under(err, member(mem.Name))
		}
		m.SetMapIndex(reflect.ValueOf(mem.Name).Convert(rv.Type().Key()), ev)
	}
	rv.Set(m)
	return nil
}

func (d *decoder) structure(j Value, rv reflect.Value) error {
	if _, err := j.Members(); err != nil {
		return err
	}
	for _, f := range d.fields(rv.Type()) {
		mv, ok := j.Get(f.name)
		if !ok {
			if f.required {
				return &Error{Reason: ErrMissing, Offset: j.off, Path: member(f.name)}
			}
			continue
		}
		if err := d.value(mv, rv.Field(f.index)); err != nil {
			return under(err, member(f.name))
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
