package protocol

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// Version is the Evolu Protocol version this package speaks (protocolVersion).
const Version = 1

// Size limits (§Message size limit).
const (
	// DefaultMaxSize is defaultProtocolMessageMaxSize (1 MB).
	DefaultMaxSize = 1_000_000
	// MinMaxSize and MaxMaxSize bound a ProtocolMessageMaxSize.
	MinMaxSize = 1_000_000
	MaxMaxSize = 100_000_000
	// DefaultRangesMaxSize is defaultProtocolMessageRangesMaxSize (30 KB).
	DefaultRangesMaxSize = 30_000
	// MinRangesMaxSize and MaxRangesMaxSize bound a ProtocolMessageRangesMaxSize.
	MinRangesMaxSize = 3_000
	MaxRangesMaxSize = 100_000
	// MinChangeSize is the smallest EncryptedDbChange: a 24-byte nonce, a
	// one-byte length and a 16-byte Poly1305 tag. A request with a shorter
	// change is malformed.
	MinChangeSize = 41
)

// OwnerID is the 16-byte OwnerIdBytes. Its text form (OwnerId) is the
// 22-character unpadded base64url encoding.
type OwnerID [16]byte

// String returns the OwnerId text form.
func (o OwnerID) String() string { return base64.RawURLEncoding.EncodeToString(o[:]) }

// ParseOwnerID parses a 22-character OwnerId. Only the canonical encoding is
// accepted, as the TS Id type requires.
func ParseOwnerID(s string) (OwnerID, error) {
	var o OwnerID
	id, err := ParseID(s)
	if err != nil {
		return o, err
	}
	return OwnerID(id), nil
}

// ID is a 16-byte Evolu Id (row id); its text form is 22 base64url characters.
type ID [16]byte

// String returns the 22-character text form.
func (i ID) String() string { return base64.RawURLEncoding.EncodeToString(i[:]) }

// ParseID parses the canonical 22-character text form of an Id.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 22 {
		return id, fmt.Errorf("evolu: invalid Id %q: length %d, want 22", s, len(s))
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("evolu: invalid Id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// WriteKey is the 16-byte OwnerWriteKey.
type WriteKey [16]byte

// NodeID is the 8-byte NodeId; its text form is 16 lowercase hex digits.
type NodeID [8]byte

// String returns the 16-hex-digit form.
func (n NodeID) String() string { return hex.EncodeToString(n[:]) }

// MaxMillis is the largest Millis of a Timestamp (2^48-2; 2^48-1 is reserved).
const MaxMillis = 1<<48 - 2

// MaxCounter is the largest Counter of a Timestamp.
const MaxCounter = 65535

// Timestamp is a hybrid logical clock timestamp (Timestamp.ts).
type Timestamp struct {
	Millis  uint64
	Counter uint16
	NodeID  NodeID
}

// TimestampBytes is the 16-byte sortable form of a Timestamp: 6 bytes of
// big-endian millis, 2 bytes of big-endian counter, 8 bytes of NodeId.
type TimestampBytes [16]byte

// Bytes returns the sortable 16-byte form of t.
func (t Timestamp) Bytes() TimestampBytes {
	var b TimestampBytes
	var m [8]byte
	binary.BigEndian.PutUint64(m[:], t.Millis)
	copy(b[0:6], m[2:8])
	binary.BigEndian.PutUint16(b[6:8], t.Counter)
	copy(b[8:], t.NodeID[:])
	return b
}

// String formats t as millis-counter-nodeId for logs.
func (t Timestamp) String() string {
	return fmt.Sprintf("%d-%d-%s", t.Millis, t.Counter, t.NodeID)
}

// Timestamp decodes b. Any 16 bytes decode: 6-byte millis cannot exceed
// 2^48-1, which Millis reserves; callers that need a valid Millis check
// Millis <= MaxMillis.
func (b TimestampBytes) Timestamp() Timestamp {
	var m [8]byte
	copy(m[2:], b[0:6])
	var t Timestamp
	t.Millis = binary.BigEndian.Uint64(m[:])
	t.Counter = binary.BigEndian.Uint16(b[6:8])
	copy(t.NodeID[:], b[8:])
	return t
}

// Compare orders timestamps bytewise, which is their causal order.
func (b TimestampBytes) Compare(o TimestampBytes) int { return bytes.Compare(b[:], o[:]) }

// Fingerprint is the first 12 bytes of SHA-256 of TimestampBytes, XORed over
// a range of timestamps (Storage.ts Fingerprint).
type Fingerprint [12]byte

// FingerprintSize is the length of a Fingerprint.
const FingerprintSize = 12

// TimestampFingerprint is the fingerprint of a single timestamp.
func TimestampFingerprint(t TimestampBytes) Fingerprint {
	h := sha256.Sum256(t[:])
	var f Fingerprint
	copy(f[:], h[:FingerprintSize])
	return f
}

// Xor returns f XOR o.
func (f Fingerprint) Xor(o Fingerprint) Fingerprint {
	for i := range f {
		f[i] ^= o[i]
	}
	return f
}

// EncryptedMessage is an EncryptedCrdtMessage: a Timestamp and the opaque
// EncryptedDbChange stored and relayed for it.
type EncryptedMessage struct {
	Timestamp Timestamp
	Change    []byte
}

// MessageType is the third header field.
type MessageType byte

// Message types.
const (
	Request   MessageType = 0
	Response  MessageType = 1
	Broadcast MessageType = 2
)

// SubscriptionFlag is the subscription field of a Request.
type SubscriptionFlag byte

// Subscription flags.
const (
	SubscriptionNone        SubscriptionFlag = 0
	SubscriptionSubscribe   SubscriptionFlag = 1
	SubscriptionUnsubscribe SubscriptionFlag = 2
)

// ErrorCode is the ProtocolErrorCode of a Response.
type ErrorCode byte

// Error codes.
const (
	NoError       ErrorCode = 0
	WriteKeyError ErrorCode = 1
	WriteError    ErrorCode = 2
	QuotaError    ErrorCode = 3
	SyncError     ErrorCode = 4
)

// RangeType discriminates the variants of a Range.
type RangeType byte

// Range types.
const (
	RangeSkip        RangeType = 0
	RangeFingerprint RangeType = 1
	RangeTimestamps  RangeType = 2
)

// UpperBound is a range's exclusive upper bound: a timestamp, or infinity
// (InfiniteUpperBound), which only the last range has and is not encoded.
type UpperBound struct {
	Infinite  bool
	Timestamp TimestampBytes
}

// InfiniteUpperBound is the bound of the last range.
var InfiniteUpperBound = UpperBound{Infinite: true}

// BoundAt is a finite upper bound at t.
func BoundAt(t TimestampBytes) UpperBound { return UpperBound{Timestamp: t} }

// Range is one range of a message: Skip, Fingerprint, or Timestamps.
type Range struct {
	Type        RangeType
	UpperBound  UpperBound
	Fingerprint Fingerprint      // RangeFingerprint only
	Timestamps  []TimestampBytes // RangeTimestamps only
}
