package media

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Envelope versions of chunk 0. The plaintext fields are positional, so the
// data purpose ships under its own version: a receiver that does not know
// version 2 refuses the chunk instead of reading the mark as file content
// (§The data purpose).
const (
	EnvelopeFile = 1 // an application's file: display name, no purpose
	EnvelopeData = 2 // a data-layer transfer: purpose mark
)

// ID names one transfer between two peers.
type ID [16]byte

// Chunk is one sealed plaintext of the media path.
//
// Byte layout (the transport seals it whole):
//
//	ID (16) | uvarint index | body
//
// Chunk 0's body identifies the transfer:
//
//	byte envelope | uint64 total size, big-endian |
//	uint16 length, field | (field: a file name for EnvelopeFile, the
//	purpose JSON for EnvelopeData; empty names none)
//
// Chunks 1..n carry the bytes in order.
type Chunk struct {
	ID    ID
	Index uint64
	Body  []byte
}

// Header is chunk 0's body.
type Header struct {
	Envelope byte
	Total    uint64
	Field    []byte
}

// ErrBadChunk means a chunk or header is malformed.
var ErrBadChunk = errors.New("datasync/media: malformed chunk")

// Marshal encodes c.
func (c Chunk) Marshal() []byte {
	b := append([]byte{}, c.ID[:]...)
	b = binary.AppendUvarint(b, c.Index)
	return append(b, c.Body...)
}

// ParseChunk decodes a chunk.
func ParseChunk(b []byte) (Chunk, error) {
	var c Chunk
	if len(b) < len(c.ID)+1 {
		return c, ErrBadChunk
	}
	copy(c.ID[:], b)
	idx, n := binary.Uvarint(b[len(c.ID):])
	if n <= 0 {
		return c, ErrBadChunk
	}
	c.Index = idx
	c.Body = b[len(c.ID)+n:]
	return c, nil
}

// Marshal encodes h.
func (h Header) Marshal() []byte {
	b := []byte{h.Envelope}
	b = binary.BigEndian.AppendUint64(b, h.Total)
	b = binary.BigEndian.AppendUint16(b, uint16(len(h.Field)))
	return append(b, h.Field...)
}

// ParseHeader decodes chunk 0's body. An unknown envelope version is an
// error, never read as another version's fields.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < 11 {
		return Header{}, ErrBadChunk
	}
	h := Header{Envelope: b[0], Total: binary.BigEndian.Uint64(b[1:9])}
	if h.Envelope != EnvelopeFile && h.Envelope != EnvelopeData {
		return Header{}, fmt.Errorf("%w: envelope version %d", ErrBadChunk, h.Envelope)
	}
	n := int(binary.BigEndian.Uint16(b[9:11]))
	if len(b) != 11+n {
		return Header{}, ErrBadChunk
	}
	h.Field = b[11:]
	return h, nil
}
