package relay

import "github.com/ferry-sync/ferry/evolu/internal/protocol"

// OwnerID identifies an owner: 16 bytes, written as 22 base64url
// characters (the ownerId of a relay URL).
type OwnerID = protocol.OwnerID

// ParseOwnerID parses the 22-character form of an OwnerId.
func ParseOwnerID(s string) (OwnerID, error) { return protocol.ParseOwnerID(s) }
