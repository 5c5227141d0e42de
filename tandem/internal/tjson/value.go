package tjson

import (
	"strconv"
	"strings"
)

// MaxInteger is the largest integer a Tandem JSON text may carry: 2^53 − 1
// (tandem-gaps.md).
const MaxInteger = 1<<53 - 1

// Kind returns the JSON type of v.
func (v Value) Kind() Kind { return v.kind }

// Offset returns the byte offset of v in the parsed text.
func (v Value) Offset() int { return v.off }

// Raw returns the exact bytes of v in the parsed text.
func (v Value) Raw() []byte { return v.raw }

// Str returns the unescaped string, or ErrType if v is not a string.
func (v Value) Str() (string, error) {
	if v.kind != KindString {
		return "", v.typeErr(KindString)
	}
	return v.s, nil
}

// Bool returns the boolean, or ErrType if v is not true or false.
func (v Value) Bool() (bool, error) {
	if v.kind != KindBool {
		return false, v.typeErr(KindBool)
	}
	return v.b, nil
}

// Uint returns v as an unsigned integer under the rules of §10.5: no
// fraction, no exponent, no minus sign, at most 2^53 − 1. It fails with
// ErrType if v is not a number and ErrInteger otherwise.
func (v Value) Uint() (uint64, error) {
	if v.kind != KindNumber {
		return 0, v.typeErr(KindNumber)
	}
	if strings.HasPrefix(v.s, "-") {
		return 0, v.intErr("minus sign where an unsigned integer belongs")
	}
	return v.magnitude()
}

// Int returns v as a signed integer: no fraction, no exponent, magnitude at
// most 2^53 − 1.
func (v Value) Int() (int64, error) {
	if v.kind != KindNumber {
		return 0, v.typeErr(KindNumber)
	}
	neg := strings.HasPrefix(v.s, "-")
	m, err := Value{kind: KindNumber, off: v.off, s: strings.TrimPrefix(v.s, "-")}.magnitude()
	if err != nil {
		return 0, err
	}
	if neg {
		return -int64(m), nil
	}
	return int64(m), nil
}

func (v Value) magnitude() (uint64, error) {
	if strings.ContainsAny(v.s, ".") {
		return 0, v.intErr("fraction in an integer")
	}
	if strings.ContainsAny(v.s, "eE") {
		return 0, v.intErr("exponent in an integer")
	}
	n, err := strconv.ParseUint(v.s, 10, 64)
	if err != nil || n > MaxInteger {
		return 0, v.intErr("above 2^53-1")
	}
	return n, nil
}

// Float returns a number as a float64 (no integer rules).
func (v Value) Float() (float64, error) {
	if v.kind != KindNumber {
		return 0, v.typeErr(KindNumber)
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if err != nil {
		return 0, &Error{Reason: ErrType, Offset: v.off, Detail: "number out of float64 range"}
	}
	return f, nil
}

// Elems returns an array's elements, or ErrType.
func (v Value) Elems() ([]Value, error) {
	if v.kind != KindArray {
		return nil, v.typeErr(KindArray)
	}
	return v.elems, nil
}

// Members returns an object's members in text order, or ErrType.
func (v Value) Members() ([]Member, error) {
	if v.kind != KindObject {
		return nil, v.typeErr(KindObject)
	}
	return v.members, nil
}

// Get returns the member of object v named name (exact bytes) and whether
// it exists. It returns false for non-objects.
func (v Value) Get(name string) (Value, bool) {
	for _, m := range v.members {
		if m.Name == name {
			return m.Value, true
		}
	}
	return Value{}, false
}

// Decode maps v onto the Go value x points to, as Unmarshal does.
func (v Value) Decode(x any) error { return decodeInto(v, x) }

func (v Value) typeErr(want Kind) error {
	return &Error{Reason: ErrType, Offset: v.off, Detail: "want " + want.String() + ", have " + v.kind.String()}
}

func (v Value) intErr(detail string) error {
	return &Error{Reason: ErrInteger, Offset: v.off, Detail: detail + ": " + v.s}
}
