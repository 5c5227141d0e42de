// Package changecodec is the EncryptedDbChange codec of @evolu/common,
// byte for byte: a change's columns as SqliteValues (JSON values as
// MessagePack, numbers formatted as JavaScript does), PADMÉ padding, and
// XChaCha20-Poly1305 (golang.org/x/crypto). Written by hand: no Go library
// reproduces those bytes. Package client re-exports DbChange, Column and
// Value.
package changecodec

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// Column is one column value of a DbChange; a change keeps its columns in
// order.
type Column struct {
	Name  string
	Value Value
}

// DbChange is a change to one row (Storage.ts DbChange).
type DbChange struct {
	Table    string
	ID       protocol.ID
	Values   []Column
	IsInsert bool
	// IsDelete is nil when the change does not touch the deleted flag.
	IsDelete *bool
}

// systemColumns may not appear among a DbChange's values (Schema.ts
// systemColumnsWithId): the row's id and what Evolu derives itself.
var systemColumns = map[string]bool{"createdAt": true, "updatedAt": true, "isDeleted": true, "ownerId": true, "id": true}

// ErrDecrypt is DecryptWithXChaCha20Poly1305Error: the change does not
// authenticate under the key.
var ErrDecrypt = errors.New("evolu: DecryptWithXChaCha20Poly1305Error")

// EncryptChange is encodeAndEncryptDbChange. The plaintext is
//
//	varint protocol version | TimestampBytes (16) | flags byte (bit 0
//	isInsert, bit 1 isDelete present, bit 2 isDelete) | string table |
//	Id (16) | varint column count | (string column, value)* | PADMÉ zeros
//
// and the result is nonce (24, read from random) | varint ciphertext length
// | XChaCha20-Poly1305 ciphertext.
func EncryptChange(random io.Reader, ts protocol.Timestamp, c DbChange, key [32]byte) ([]byte, error) {
	pt := protocol.AppendNonNegativeInt(nil, protocol.Version)
	tb := ts.Bytes()
	pt = append(pt, tb[:]...)
	var flags byte
	if c.IsInsert {
		flags |= 1
	}
	if c.IsDelete != nil {
		flags |= 2
		if *c.IsDelete {
			flags |= 4
		}
	}
	pt = append(pt, flags)
	pt = appendString(pt, c.Table)
	pt = append(pt, c.ID[:]...)
	pt = protocol.AppendNonNegativeInt(pt, uint64(len(c.Values)))
	var err error
	for _, col := range c.Values {
		if systemColumns[col.Name] {
			return nil, fmt.Errorf("evolu: %q is a system column", col.Name)
		}
		pt = appendString(pt, col.Name)
		if pt, err = appendValue(pt, col.Value); err != nil {
			return nil, fmt.Errorf("evolu: column %q: %w", col.Name, err)
		}
	}
	pt = append(pt, make([]byte, padmeLength(len(pt))-len(pt))...)
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, chacha20poly1305.NonceSizeX)
	if _, err := io.ReadFull(random, nonce); err != nil {
		return nil, fmt.Errorf("evolu: nonce: %w", err)
	}
	ct := aead.Seal(nil, nonce, pt, nil)
	out := append(nonce, protocol.AppendNonNegativeInt(nil, uint64(len(ct)))...)
	return append(out, ct...), nil
}

func appendString(b []byte, s string) []byte {
	b = protocol.AppendNonNegativeInt(b, uint64(len(s)))
	return append(b, s...)
}

// DecryptChange is decryptAndDecodeDbChange: it returns ErrDecrypt, a
// *protocol.TimestampMismatchError, or a *protocol.InvalidDataError for a
// change it cannot read.
func DecryptChange(m protocol.EncryptedMessage, key [32]byte) (DbChange, error) {
	d := valueDecoder{b: m.Change}
	nonce, err := d.bytes(chacha20poly1305.NonceSizeX)
	if err != nil {
		return DbChange{}, &protocol.InvalidDataError{Data: m.Change, Err: err}
	}
	ct, err := d.lengthPrefixed()
	if err != nil {
		return DbChange{}, &protocol.InvalidDataError{Data: m.Change, Err: err}
	}
	if len(ct) < chacha20poly1305.Overhead {
		return DbChange{}, &protocol.InvalidDataError{Data: m.Change, Err: errors.New("ciphertext shorter than its tag")}
	}
	aead, err := chacha20poly1305.NewX(key[:])
	if err != nil {
		return DbChange{}, err
	}
	pt, err := aead.Open(nil, nonce, ct, nil)
	if err != nil {
		return DbChange{}, ErrDecrypt
	}
	c, err := decodePlaintext(pt, m.Timestamp)
	if err != nil {
		var tm *protocol.TimestampMismatchError
		if errors.As(err, &tm) {
			return DbChange{}, tm
		}
		return DbChange{}, &protocol.InvalidDataError{Data: m.Change, Err: err}
	}
	return c, nil
}

func decodePlaintext(pt []byte, expected protocol.Timestamp) (DbChange, error) {
	var c DbChange
	d := valueDecoder{b: pt}
	if _, err := d.varint(); err != nil { // version, for future use
		return c, err
	}
	tsb, err := d.bytes(16)
	if err != nil {
		return c, err
	}
	ts := protocol.TimestampBytes(tsb).Timestamp()
	if ts != expected {
		return c, &protocol.TimestampMismatchError{Expected: expected, Timestamp: ts}
	}
	fb, err := d.bytes(1)
	if err != nil {
		return c, err
	}
	c.IsInsert = fb[0]&1 != 0
	if fb[0]&2 != 0 {
		del := fb[0]&4 != 0
		c.IsDelete = &del
	}
	if c.Table, err = d.string(); err != nil {
		return c, err
	}
	id, err := d.bytes(16)
	if err != nil {
		return c, err
	}
	c.ID = protocol.ID(id)
	n, err := d.varint()
	if err != nil {
		return c, err
	}
	if n > uint64(len(d.b)) {
		return c, errTruncated
	}
	seen := make(map[string]int, n)
	for range n {
		name, err := d.string()
		if err != nil {
			return c, err
		}
		if systemColumns[name] {
			return c, fmt.Errorf("DbChange values contain the system column %q", name)
		}
		v, err := d.value()
		if err != nil {
			return c, err
		}
		// A repeated column keeps its first position and its last value,
		// as assigning into a JavaScript object does.
		if i, ok := seen[name]; ok {
			c.Values[i].Value = v
			continue
		}
		seen[name] = len(c.Values)
		c.Values = append(c.Values, Column{Name: name, Value: v})
	}
	return c, nil
}
