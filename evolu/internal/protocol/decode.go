package protocol

import (
	"errors"
	"fmt"
)

// Header is the routing prefix of a message (ProtocolHeader). Type is
// meaningful only when Version equals Version.
type Header struct {
	Version uint64
	OwnerID OwnerID
	Type    MessageType
}

// Message is a decoded ProtocolMessage.
type Message struct {
	Header
	// HasWriteKey and WriteKey: Request only.
	HasWriteKey bool
	WriteKey    WriteKey
	// Subscription: Request only.
	Subscription SubscriptionFlag
	// ErrorCode: Response only.
	ErrorCode ErrorCode
	Messages  []EncryptedMessage
	Ranges    []Range
}

// ParseHeader reads the version and OwnerId, and the message type when the
// version is ours. It succeeds for other versions, so a version-mismatch
// reply reaches the caller.
func ParseHeader(b []byte) (Header, error) {
	d := decoder{b: b}
	h, err := d.header()
	if err != nil {
		return h, invalid(b, err)
	}
	return h, nil
}

func (d *decoder) header() (Header, error) {
	var h Header
	v, err := d.nonNegativeInt()
	if err != nil {
		return h, err
	}
	h.Version = v
	p, err := d.bytes(16)
	if err != nil {
		return h, err
	}
	copy(h.OwnerID[:], p)
	if v != Version {
		return h, nil
	}
	t, err := d.byte()
	if err != nil {
		return h, err
	}
	if t > byte(Broadcast) {
		return h, fmt.Errorf("invalid MessageType %d", t)
	}
	h.Type = MessageType(t)
	return h, nil
}

// Decode decodes a whole message. A message of another version decodes to
// its Header alone (the rest of its layout is unknown) and no error.
// Decoding is strict: every malformed input listed in the specification —
// truncation, an unknown message type, hasWriteKey not 0 or 1, a
// subscription flag or error code out of range, an over-long or unsafe
// varint, counters or millis out of range, bad run lengths, an unknown range
// type, decreasing range bounds, a change shorter than MinChangeSize in a
// Request, or bytes after the last field — yields an InvalidDataError
// (docs/decisions/evolu-strict-decoding.md).
func Decode(b []byte) (*Message, error) {
	m, err := decode(b)
	if err != nil {
		return nil, invalid(b, err)
	}
	return m, nil
}

func decode(b []byte) (*Message, error) {
	d := decoder{b: b}
	h, err := d.header()
	if err != nil {
		return nil, err
	}
	m := &Message{Header: h}
	if h.Version != Version {
		return m, nil
	}
	switch h.Type {
	case Request:
		if err := d.requestHeader(m); err != nil {
			return nil, err
		}
	case Response:
		c, err := d.byte()
		if err != nil {
			return nil, err
		}
		if c > byte(SyncError) {
			return nil, fmt.Errorf("invalid ProtocolErrorCode %d", c)
		}
		m.ErrorCode = ErrorCode(c)
	}
	if m.Messages, err = d.messages(h.Type == Request); err != nil {
		return nil, err
	}
	if m.Ranges, err = d.ranges(); err != nil {
		return nil, err
	}
	if d.remaining() != 0 {
		return nil, fmt.Errorf("%d trailing bytes", d.remaining())
	}
	return m, nil
}

func (d *decoder) requestHeader(m *Message) error {
	hk, err := d.byte()
	if err != nil {
		return err
	}
	switch hk {
	case 0:
	case 1:
		p, err := d.bytes(16)
		if err != nil {
			return err
		}
		m.HasWriteKey = true
		copy(m.WriteKey[:], p)
	default:
		return fmt.Errorf("invalid hasWriteKey %d", hk)
	}
	sf, err := d.byte()
	if err != nil {
		return err
	}
	if sf > byte(SubscriptionUnsubscribe) {
		return fmt.Errorf("invalid SubscriptionFlag %d", sf)
	}
	m.Subscription = SubscriptionFlag(sf)
	return nil
}

func (d *decoder) messages(isRequest bool) ([]EncryptedMessage, error) {
	n, err := d.nonNegativeInt()
	if err != nil {
		return nil, err
	}
	ts, err := d.timestamps(n)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, nil
	}
	msgs := make([]EncryptedMessage, len(ts))
	for i, t := range ts {
		l, err := d.nonNegativeInt()
		if err != nil {
			return nil, err
		}
		if isRequest && l < MinChangeSize {
			return nil, fmt.Errorf("change of %d bytes is shorter than %d", l, MinChangeSize)
		}
		c, err := d.bytes(l)
		if err != nil {
			return nil, err
		}
		msgs[i] = EncryptedMessage{Timestamp: t, Change: c}
	}
	return msgs, nil
}

var errDecreasingBounds = errors.New("range upper bounds decrease")

func (d *decoder) ranges() ([]Range, error) {
	if d.remaining() == 0 {
		return nil, nil
	}
	n, err := d.nonNegativeInt()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	if n > uint64(d.remaining()) {
		return nil, errTruncated
	}
	bounds, err := d.timestamps(n - 1)
	if err != nil {
		return nil, err
	}
	rs := make([]Range, n)
	for i := range rs {
		t, err := d.nonNegativeInt()
		if err != nil {
			return nil, err
		}
		if t > uint64(RangeTimestamps) {
			return nil, fmt.Errorf("invalid RangeType %d", t)
		}
		rs[i].Type = RangeType(t)
		if i < len(bounds) {
			rs[i].UpperBound = BoundAt(bounds[i].Bytes())
			if i > 0 && rs[i].UpperBound.Timestamp.Compare(rs[i-1].UpperBound.Timestamp) < 0 {
				return nil, errDecreasingBounds
			}
		} else {
			rs[i].UpperBound = InfiniteUpperBound
		}
	}
	for i := range rs {
		switch rs[i].Type {
		case RangeFingerprint:
			p, err := d.bytes(FingerprintSize)
			if err != nil {
				return nil, err
			}
			copy(rs[i].Fingerprint[:], p)
		case RangeTimestamps:
			c, err := d.nonNegativeInt()
			if err != nil {
				return nil, err
			}
			ts, err := d.timestamps(c)
			if err != nil {
				return nil, err
			}
			rs[i].Timestamps = make([]TimestampBytes, len(ts))
			for j, t := range ts {
				rs[i].Timestamps[j] = t.Bytes()
			}
		}
	}
	return rs, nil
}

// VersionMismatchReply is the non-initiator's answer to a message of another
// version: only its own version and the OwnerId (§Versioning).
func VersionMismatchReply(owner OwnerID) []byte {
	b := AppendNonNegativeInt(nil, Version)
	return append(b, owner[:]...)
}

// Encode encodes m without size limits other than MaxMaxSize. Its messages
// must be in non-decreasing millis order and its last range, if any, must be
// infinite. Decode(Encode(m)) equals m.
func Encode(m *Message) ([]byte, error) {
	if m.Version != Version {
		return nil, fmt.Errorf("evolu: cannot encode version %d", m.Version)
	}
	opts := BufferOptions{Type: m.Type, Subscription: m.Subscription, ErrorCode: m.ErrorCode,
		TotalMaxSize: MaxMaxSize * 100, RangesMaxSize: MaxMaxSize * 100}
	if m.HasWriteKey {
		k := m.WriteKey
		opts.WriteKey = &k
	}
	b := NewMessageBuffer(m.OwnerID, opts)
	for _, msg := range m.Messages {
		if err := b.AddMessage(msg); err != nil {
			return nil, err
		}
	}
	for _, r := range m.Ranges {
		if err := b.AddRange(r); err != nil {
			return nil, err
		}
	}
	return b.Bytes()
}
