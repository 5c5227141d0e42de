package frame

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Parse decodes one frame. known lists the versions the caller reads (V1 when
// empty). The order of work follows §Frames:
//
//  1. the prefix, else [ErrNotFrame];
//  2. the length, else [ErrOverBudget] (§Bounds, before any parsing);
//  3. v, and only v, else [ErrUnknownVersion] for a version not in known;
//  4. the body of that version.
//
// Absent reply and partial read as false. Unknown fields are ignored;
// duplicate fields, null values and values of the wrong type are
// [ErrMalformed]. Base64 is checked against the budget before decoding.
func Parse(wire []byte, known ...uint64) (Frame, error) {
	body, ok := bytes.CutPrefix(wire, []byte(Prefix))
	if !ok {
		return Frame{}, ErrNotFrame
	}
	if len(wire) > MaxFrameBytes {
		return Frame{}, &OverBudgetError{Bytes: len(wire), Frame: true}
	}
	v, err := ReadVersion(body)
	if err != nil {
		return Frame{}, err
	}
	if len(known) == 0 {
		known = []uint64{V1}
	}
	if !slices.Contains(known, v) {
		return Frame{}, fmt.Errorf("%w: v=%d", ErrUnknownVersion, v)
	}
	f, err := parseBody(body)
	if err != nil {
		return Frame{}, err
	}
	f.V = v
	return f, nil
}

// ReadVersion reads the v field of a frame body (the JSON object after the
// prefix) without looking at any field after it when it comes first, as the
// frame format puts it. When it does not come first, the other top-level
// values are skipped unread until it is found.
func ReadVersion(body []byte) (uint64, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, fmt.Errorf("%w: body is not a JSON object", ErrMalformed)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if key != "v" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return versionNumber(raw)
	}
	return 0, fmt.Errorf("%w: no v field", ErrMalformed)
}

// versionNumber reads v's JSON value. Only a JSON integer in the range of
// uint64 names a version; anything else (a string such as "1", a fraction,
// an exponent, a negative number, another type) names no version this
// implementation knows, so it is ErrUnknownVersion: consumed silently and
// never acted on (§Frames), rather than coerced to a version.
func versionNumber(raw json.RawMessage) (uint64, error) {
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: v=%.20s is not an unsigned JSON integer", ErrUnknownVersion, raw)
		}
	}
	v, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: v=%.20s is out of range", ErrUnknownVersion, raw)
	}
	return v, nil
}

// fields holds the raw top-level values of a body, each seen at most once.
type fields map[string]json.RawMessage

func readFields(body []byte) (fields, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%w: body is not a JSON object", ErrMalformed)
	}
	fs := fields{}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		name := key.(string)
		if _, dup := fs[name]; dup {
			return nil, fmt.Errorf("%w: duplicate field %q", ErrMalformed, name)
		}
		fs[name] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the body", ErrMalformed)
	}
	return fs, nil
}

// str reads a required string field.
func (fs fields) str(name string) (string, error) {
	raw, ok := fs[name]
	if !ok {
		return "", fmt.Errorf("%w: missing %q", ErrMalformed, name)
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%w: %q is not a string", ErrMalformed, name)
	}
	return s, nil
}

// flag reads an optional boolean: absent is false (§Frames), null or any
// other type is malformed.
func (fs fields) flag(name string) (bool, error) {
	raw, ok := fs[name]
	if !ok {
		return false, nil
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%w: %q is not a boolean", ErrMalformed, name)
}

func parseBody(body []byte) (Frame, error) {
	fs, err := readFields(body)
	if err != nil {
		return Frame{}, err
	}
	k, err := fs.str("k")
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Kind: Kind(k)}
	switch f.Kind {
	case KindOffer:
		err = parseOffer(fs, &f)
	case KindDelta, KindSnap:
		if f.Doc, err = docField(fs); err != nil {
			return Frame{}, err
		}
		var b64 string
		if b64, err = fs.str("blob"); err != nil {
			return Frame{}, err
		}
		f.Blob, err = decodeBudgeted(b64, f.Doc)
	case KindNeedSnap:
		f.Doc, err = docField(fs)
	case KindNeedBlob, KindBlobGone:
		if f.Hash, err = fs.str("hash"); err == nil && !ValidHash(f.Hash) {
			err = fmt.Errorf("%w: hash is not 64 lowercase hex", ErrMalformed)
		}
	default:
		return Frame{}, fmt.Errorf("%w: %q", ErrUnknownKind, k)
	}
	if err != nil {
		return Frame{}, err
	}
	return f, nil
}

func docField(fs fields) (string, error) {
	doc, err := fs.str("doc")
	if err != nil {
		return "", err
	}
	return doc, checkDoc(doc)
}

func parseOffer(fs fields, f *Frame) error {
	var err error
	if f.Reply, err = fs.flag("reply"); err != nil {
		return err
	}
	if f.Partial, err = fs.flag("partial"); err != nil {
		return err
	}
	raw, ok := fs["docs"]
	if !ok || raw[0] != '{' {
		return fmt.Errorf("%w: docs is not an object", ErrMalformed)
	}
	docs, err := readFields(raw)
	if err != nil {
		return err
	}
	total := 0
	for _, v := range docs {
		if v[0] != '"' {
			return fmt.Errorf("%w: a version is not a string", ErrMalformed)
		}
		total += decodedLen(string(v[1 : len(v)-1]))
	}
	if total > MaxDocumentBytes {
		return &OverBudgetError{Bytes: total}
	}
	// One bad name or version token drops the whole frame, where the
	// reference skips that document: docs/decisions/datasync-version-token.md.
	f.Docs = make(map[string][]byte, len(docs))
	for name := range docs {
		if err := checkDoc(name); err != nil {
			return err
		}
		s, err := docs.str(name)
		if err != nil {
			return err
		}
		if f.Docs[name], err = decodeBudgeted(s, name); err != nil {
			return err
		}
	}
	return nil
}

// decodedLen is the number of bytes padded standard base64 text of this
// length declares, computed without decoding it.
func decodedLen(s string) int {
	n := len(s) / 4 * 3
	return n - (len(s) - len(strings.TrimRight(s, "=")))
}

// decodeBudgeted checks the budget (§Bounds) on the text, then decodes it as
// strict padded standard base64.
func decodeBudgeted(s, doc string) ([]byte, error) {
	if n := decodedLen(s); n > MaxDocumentBytes {
		return nil, &OverBudgetError{Doc: doc, Bytes: n}
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", ErrMalformed, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}
