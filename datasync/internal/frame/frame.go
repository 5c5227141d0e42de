// Package frame is the __DATA_V1__ frame codec of data-sync-v1 (§Frames).
//
// A frame is the prefix "__DATA_V1__" followed by a JSON object whose first
// field is the schema version v and whose k field names one of six kinds:
//
//	__DATA_V1__{"v":1,"k":"vv","reply":false,"partial":false,"docs":{"<doc>":"<base64 version>"}}
//	__DATA_V1__{"v":1,"k":"delta","doc":"<name>","blob":"<base64>"}
//	__DATA_V1__{"v":1,"k":"snap","doc":"<name>","blob":"<base64>"}
//	__DATA_V1__{"v":1,"k":"need_snap","doc":"<name>"}
//	__DATA_V1__{"v":1,"k":"need_blob","hash":"<64 lowercase hex>"}
//	__DATA_V1__{"v":1,"k":"blob_gone","hash":"<64 lowercase hex>"}
//
// [Marshal] writes exactly these bytes: the fields in the order shown, reply
// and partial always written, docs keys sorted bytewise, base64 in the
// standard alphabet with padding, strings escaped as the reference writer
// escapes them. [Parse] reads v before anything else in the body and stops
// with [ErrUnknownVersion] for a version the caller does not know, so that
// the caller consumes the frame without surfacing it (§Frames: "A receiver
// MUST read v before attempting to parse the body"). Absent reply and partial
// read as false. The 32 KiB document-byte budget (§Bounds) is checked on the
// base64 text before any of it is decoded.
//
// The codec is written by hand on top of encoding/json's tokenizer because
// byte-exact field order and the version-first read are not something a
// struct-tag encoder offers.
package frame

import (
	"errors"
	"fmt"
)

// Prefix marks a data-layer frame inside a decrypted plaintext (§Frames).
const Prefix = "__DATA_V1__"

// V1 is the frame schema version the reference encoding is named by.
const V1 uint64 = 1

// MaxDocumentBytes is the most document bytes (before base64) a frame may
// carry (§Bounds: "A frame carries at most 32 KiB of document bytes").
const MaxDocumentBytes = 32 * 1024

// MaxFrameBytes bounds a whole frame, prefix included. A frame longer than
// this is refused before its JSON is read. It leaves room for 32 KiB of
// document bytes in base64 (43,692 characters) plus names and JSON, and stays
// under the roughly 69 KiB an unnegotiated Bluetooth link carries.
const MaxFrameBytes = 60 * 1024

// Kind names a frame's kind (its k field).
type Kind string

// The six kinds of version 1.
const (
	KindOffer    Kind = "vv"        // version offer
	KindDelta    Kind = "delta"     // changes since the peer's version
	KindSnap     Kind = "snap"      // a whole document
	KindNeedSnap Kind = "need_snap" // no run of changes can close the gap
	KindNeedBlob Kind = "need_blob" // attachment fetch (entry 3)
	KindBlobGone Kind = "blob_gone" // attachment not held (entry 3)
)

// Frame is one decoded frame. Which fields are meaningful depends on Kind:
// Reply, Partial and Docs for KindOffer; Doc for delta, snap and need_snap;
// Blob for delta and snap; Hash for need_blob and blob_gone.
type Frame struct {
	V       uint64
	Kind    Kind
	Reply   bool
	Partial bool
	Docs    map[string][]byte
	Doc     string
	Blob    []byte
	Hash    string
}

// Errors returned by [Parse] and [Marshal]. Every one is terminal: the frame
// is acknowledged and dropped (§Delivery), never deferred.
var (
	// ErrNotFrame means the plaintext does not start with [Prefix]; it is
	// not a data-layer frame at all.
	ErrNotFrame = errors.New("datasync/frame: not a " + Prefix + " frame")
	// ErrUnknownVersion means v names a version the caller does not know.
	// The frame MUST be consumed without surfacing it (§Frames).
	ErrUnknownVersion = errors.New("datasync/frame: unknown frame version")
	// ErrMalformed means the body is not a well-formed frame of its version.
	ErrMalformed = errors.New("datasync/frame: malformed frame")
	// ErrUnknownKind means v is known but k names no kind of that version.
	ErrUnknownKind = errors.New("datasync/frame: unknown frame kind")
	// ErrOverBudget means the frame carries more than [MaxDocumentBytes]
	// document bytes, or is longer than [MaxFrameBytes] (§Bounds).
	ErrOverBudget = errors.New("datasync/frame: over the document-byte budget")
)

// OverBudgetError says which bound a frame broke and, when it names one,
// which document, so the receiver can report it (§Reporting). It matches
// [ErrOverBudget] with errors.Is.
type OverBudgetError struct {
	Doc   string // empty when the frame names no single document
	Bytes int    // the document bytes declared, or the frame's length
	// Frame is set when the frame is longer than [MaxFrameBytes] (Bytes
	// is its length); otherwise it carries more than [MaxDocumentBytes].
	Frame bool
}

func (e *OverBudgetError) Error() string {
	switch {
	case e.Frame && e.Doc != "":
		return fmt.Sprintf("datasync/frame: frame for document %q is %d bytes, over the %d-byte frame bound", e.Doc, e.Bytes, MaxFrameBytes)
	case e.Frame:
		return fmt.Sprintf("datasync/frame: frame is %d bytes, over the %d-byte frame bound", e.Bytes, MaxFrameBytes)
	case e.Doc == "":
		return fmt.Sprintf("datasync/frame: offer carries %d bytes of versions, over the %d-byte budget", e.Bytes, MaxDocumentBytes)
	}
	return fmt.Sprintf("datasync/frame: document %q carries %d bytes, over the %d-byte budget", e.Doc, e.Bytes, MaxDocumentBytes)
}

// Is makes an *OverBudgetError match [ErrOverBudget].
func (e *OverBudgetError) Is(target error) bool { return target == ErrOverBudget }

// ValidHash reports whether h is exactly 64 lowercase hexadecimal characters
// (§Attachments). Uppercase is not folded: it is a different, invalid address.
func ValidHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
