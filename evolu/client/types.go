package client

import (
	"github.com/ferry-sync/ferry/evolu/internal/changecodec"
	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// The protocol types an app names when it uses this package; the wire
// codec itself is internal.
type (
	// OwnerID identifies an owner: 16 bytes, written as 22 base64url
	// characters.
	OwnerID = protocol.OwnerID
	// ID is a row id: 16 bytes, written as 22 base64url characters.
	ID = protocol.ID
	// Timestamp is an Evolu hybrid logical clock timestamp.
	Timestamp = protocol.Timestamp
	// WriteKey is an owner's 16-byte write key.
	WriteKey = protocol.WriteKey
	// DbChange is one row change (Put writes it; its encrypted form is
	// what relays store).
	DbChange = changecodec.DbChange
	// Column is one column value of a DbChange or a Row.
	Column = changecodec.Column
	// Value is a column value: nil, float64, string or []byte.
	Value = changecodec.Value
)

// ParseOwnerID parses the 22-character form of an OwnerId.
func ParseOwnerID(s string) (OwnerID, error) { return protocol.ParseOwnerID(s) }

// ParseID parses the 22-character form of a row id.
func ParseID(s string) (ID, error) { return protocol.ParseID(s) }
