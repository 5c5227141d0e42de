package tjson

import (
	"errors"
	"fmt"
)

// ErrInvalid matches every error this package returns for bad input.
var ErrInvalid = errors.New("tjson: invalid JSON")

// The reasons a text is rejected. Every *Error matches ErrInvalid and
// exactly one of these with errors.Is.
var (
	ErrSyntax        = errors.New("syntax error")
	ErrDuplicateName = errors.New("duplicate member name")
	ErrInvalidUTF8   = errors.New("invalid UTF-8")
	ErrLoneSurrogate = errors.New("escaped lone surrogate")
	ErrTrailingData  = errors.New("trailing data after the JSON value")
	ErrDepth         = errors.New("nesting too deep")
	ErrInteger       = errors.New("not an integer in range")
	ErrType          = errors.New("wrong JSON type")
	ErrMissing       = errors.New("required member missing")
	ErrBytes         = errors.New("not a b64u byte string of the right length")
)

// Error describes why a text was rejected: the reason, the byte offset in
// the input (-1 if unknown) and, for schema errors, the path of the value,
// e.g. ".writes[0].d".
type Error struct {
	Reason error
	Offset int
	Path   string
	Detail string
}

func (e *Error) Error() string {
	s := ErrInvalid.Error() + ": " + e.Reason.Error()
	if e.Path != "" {
		s += " at " + e.Path
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" (offset %d)", e.Offset)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap makes errors.Is match ErrInvalid and the reason.
func (e *Error) Unwrap() []error { return []error{ErrInvalid, e.Reason} }
