// Package tjson is the one strict reading of JSON that every Tandem payload
// decoder uses (tandem.txt §10.5, tandem-gaps.md "One reading of JSON").
//
// A text is rejected whole, with an error matching ErrInvalid and one
// specific reason, if:
//
//   - an object has two members whose names are equal after unescaping,
//     compared as UTF-8 bytes (ErrDuplicateName);
//   - a string or member name is not valid UTF-8 after unescaping
//     (ErrInvalidUTF8), or contains an escaped lone surrogate such as
//     "\ud800" (ErrLoneSurrogate);
//   - the text is not exactly one JSON value: trailing bytes, a byte-order
//     mark (ErrTrailingData, ErrSyntax);
//   - a number is given where the schema wants an integer and it has a
//     fraction, an exponent, a minus sign where only unsigned fits, or is
//     above 2^53 − 1 (ErrInteger);
//   - a field the schema defines has the wrong JSON type, null included
//     (ErrType).
//
// Unknown member names are ignored, after the checks above. Member names
// match struct fields by exact bytes: no case folding, no normalization
// (§10.5 "Bytes, not strings"), unlike encoding/json.
//
// The schema is a Go type: Unmarshal maps the validated tree onto structs
// (field names from `json:"name"` tags; a `tjson:"required"` tag makes a
// missing member an error, ErrMissing), strings, bools, integers, slices,
// maps with string keys, pointers (optional members), and types that
// implement Unmarshaler. Byte strings — []byte, [N]byte and Bytes — are read
// from b64u strings (RFC 4648 §5, no padding; readers reject padding, the
// standard alphabet and non-zero trailing bits), [N]byte with exactly N
// bytes.
//
// Choices where the spec is silent (null, exact name matching, required
// members, b64u strictness, depth): docs/decisions/tandem-suite-json.md.
//
// Written by hand because no standard or well-kept Go library rejects
// duplicate names and escaped lone surrogates while matching names exactly
// (encoding/json folds case and keeps the last duplicate; encoding/json/v2
// is still an experiment).
package tjson
