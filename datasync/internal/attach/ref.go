// Package attach is the attachment layer of data-sync-v1 (§Attachments): the
// canonical reference map a document holds in place of a blob, the content
// address and quarantine digest of blob bytes, and the fetch machinery that
// moves bytes over the media path (need_blob, blob_gone, bounded repeats,
// request expiry timed from the last sign of progress).
//
// The reference reader and writer are written by hand over encoding/json's
// tokenizer: every bound is checked in both directions, and a reference that
// fails any check reads as absent (§Attachments: "one that fails any check
// reads as absent, exactly as an unknown value kind does").
package attach

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ferry-sync/ferry/datasync/internal/frame"
	"github.com/ferry-sync/ferry/datasync/internal/jsonstr"
)

// Bounds of a reference (§Attachments).
const (
	MaxSize     = math.MaxInt64 // 2^63 - 1
	MaxNameLen  = 256           // bytes of UTF-8
	MaxMimeLen  = 255           // bytes of UTF-8
	KindAttach  = "attachment"
	HashHexSize = 64
)

// ErrInvalidRef means a reference breaks a bound and must not be written.
var ErrInvalidRef = errors.New("datasync/attach: invalid attachment reference")

// Ref is an attachment reference: a whole value, replaced and never edited
// in place. Name and Mime are optional; empty means absent, and absent is
// written by leaving the field out, never as null.
//
// Name and Mime are untrusted display text written by a peer. Name is never a
// path: nothing in this module opens, creates or joins a file by it.
type Ref struct {
	Hash string // SHA-256 of the whole blob, 64 lowercase hex
	Size int64  // 1..2^63-1; not an allocation hint
	Name string // display name, at most 256 bytes
	Mime string // media type, at most 255 bytes
}

// Check returns nil when r satisfies every bound of §Attachments.
func (r Ref) Check() error {
	switch {
	case !frame.ValidHash(r.Hash):
		return fmt.Errorf("%w: hash %q is not 64 lowercase hex", ErrInvalidRef, r.Hash)
	case r.Size <= 0:
		return fmt.Errorf("%w: size %d is not positive", ErrInvalidRef, r.Size)
	case len(r.Name) > MaxNameLen || !utf8.ValidString(r.Name):
		return fmt.Errorf("%w: name is over %d bytes or not UTF-8", ErrInvalidRef, MaxNameLen)
	case len(r.Mime) > MaxMimeLen || !utf8.ValidString(r.Mime):
		return fmt.Errorf("%w: mime is over %d bytes or not UTF-8", ErrInvalidRef, MaxMimeLen)
	}
	return nil
}

// Marshal writes the canonical map, fields in the order kind, hash, size,
// name, mime, optional fields absent when empty. It refuses a reference that
// breaks a bound: bounds are checked where a reference is written.
func (r Ref) Marshal() ([]byte, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	b := []byte(`{"kind":"attachment","hash":"`)
	b = append(b, r.Hash...)
	b = append(b, `","size":`...)
	b = strconv.AppendInt(b, r.Size, 10)
	if r.Name != "" {
		b = append(b, `,"name":`...)
		b = appendJSONString(b, r.Name)
	}
	if r.Mime != "" {
		b = append(b, `,"mime":`...)
		b = appendJSONString(b, r.Mime)
	}
	return append(b, '}'), nil
}

// Read reads a reference from a document value. ok is false, and the value
// reads as absent, when it is not a reference of this version: not a JSON
// object, kind other than "attachment", a known field of the wrong type, a
// duplicate field, or any bound broken. Unknown fields are ignored.
func Read(value []byte) (r Ref, ok bool) {
	if !utf8.Valid(value) {
		return Ref{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Ref{}, false
	}
	seen := map[string]bool{}
	var kind string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return Ref{}, false
		}
		name := key.(string)
		if seen[name] {
			return Ref{}, false
		}
		seen[name] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Ref{}, false
		}
		if !readField(&r, &kind, name, raw) {
			return Ref{}, false
		}
	}
	if _, err := dec.Token(); err != nil {
		return Ref{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return Ref{}, false
	}
	if kind != KindAttach || !seen["hash"] || !seen["size"] || r.Check() != nil {
		return Ref{}, false
	}
	return r, true
}

// readField stores one known field, reporting false for a wrong type.
// Unknown fields are accepted and ignored.
func readField(r *Ref, kind *string, name string, raw json.RawMessage) bool {
	switch name {
	case "kind":
		return readString(raw, kind)
	case "hash":
		return readString(raw, &r.Hash)
	case "name":
		return readString(raw, &r.Name)
	case "mime":
		return readString(raw, &r.Mime)
	case "size":
		// An integer literal only: 34.0, 3.4e1 and -1 are not sizes.
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return false
		}
		r.Size = n
	}
	return true
}

func readString(raw json.RawMessage, dst *string) bool {
	return raw[0] == '"' && json.Unmarshal(raw, dst) == nil
}

// Hash returns the content address of blob bytes: SHA-256, lowercase hex.
func Hash(blob []byte) string {
	sum := sha256.Sum256(blob)
	return hex.EncodeToString(sum[:])
}

// Digest returns the crash-quarantine digest of blob bytes: the first 16
// bytes of the SHA-256, lowercase hex, 32 characters (§Delivery).
func Digest(blob []byte) string {
	sum := sha256.Sum256(blob)
	return hex.EncodeToString(sum[:16])
}

// Of returns the reference for blob with the given display fields.
func Of(blob []byte, name, mime string) (Ref, error) {
	r := Ref{Hash: Hash(blob), Size: int64(len(blob)), Name: name, Mime: mime}
	return r, r.Check()
}

func appendJSONString(b []byte, s string) []byte { return jsonstr.Append(b, s) }
