package media

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/jsonstr"
)

// Purpose kinds (§The data purpose).
const (
	PurposeAttachment = "attachment" // blob bytes answering need_blob
	PurposeSnapshot   = "snapshot"   // a whole oversized document
)

// Purpose is the data mark a transfer's chunk 0 carries inside its sealed
// plaintext. It names what the bytes are for and, for a document, which
// document; never the space.
type Purpose struct {
	P    string // PurposeAttachment or PurposeSnapshot
	Hash string // attachment: the blob's address
	Doc  string // snapshot: the document
}

// ErrBadPurpose means a purpose mark is malformed.
var ErrBadPurpose = errors.New("datasync/media: malformed data purpose")

// Marshal writes the mark byte-exactly:
//
//	{"p":"attachment","hash":"<64 lowercase hex>"}
//	{"p":"snapshot","doc":"<name>"}
func (p Purpose) Marshal() ([]byte, error) {
	switch p.P {
	case PurposeAttachment:
		if !frame.ValidHash(p.Hash) {
			return nil, fmt.Errorf("%w: hash", ErrBadPurpose)
		}
		return []byte(`{"p":"attachment","hash":"` + p.Hash + `"}`), nil
	case PurposeSnapshot:
		if p.Doc == "" {
			return nil, fmt.Errorf("%w: empty doc", ErrBadPurpose)
		}
		return append(jsonstr.Append([]byte(`{"p":"snapshot","doc":`), p.Doc), '}'), nil
	}
	return nil, fmt.Errorf("%w: kind %q", ErrBadPurpose, p.P)
}

// ParsePurpose reads a mark written by [Purpose.Marshal].
func ParsePurpose(b []byte) (Purpose, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return Purpose{}, fmt.Errorf("%w: %v", ErrBadPurpose, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Purpose{}, fmt.Errorf("%w: trailing data", ErrBadPurpose)
	}
	var p Purpose
	str := func(k string, dst *string) error {
		v, ok := raw[k]
		if !ok || len(v) == 0 || v[0] != '"' || json.Unmarshal(v, dst) != nil {
			return fmt.Errorf("%w: field %q", ErrBadPurpose, k)
		}
		return nil
	}
	if err := str("p", &p.P); err != nil {
		return Purpose{}, err
	}
	var err error
	switch p.P {
	case PurposeAttachment:
		err = str("hash", &p.Hash)
	case PurposeSnapshot:
		err = str("doc", &p.Doc)
	default:
		err = fmt.Errorf("%w: kind %q", ErrBadPurpose, p.P)
	}
	if err != nil {
		return Purpose{}, err
	}
	if _, err := p.Marshal(); err != nil {
		return Purpose{}, err
	}
	return p, nil
}
