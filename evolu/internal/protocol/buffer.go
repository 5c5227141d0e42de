package protocol

import (
	"errors"
	"fmt"
	"slices"
)

// Safe margins of the TS ProtocolMessageBuffer. They are part of the
// protocol's observable behaviour: they decide where a message is cut, so
// they match Protocol.ts exactly.
const (
	marginRemainingRange = FingerprintSize + 10 // range type + count growth
	marginTimestamp      = 30                   // max millis + max counter + NodeId
	marginChangeLength   = 8                    // max varint of a change length
	marginSplitRange     = 800                  // worst case of 16 fingerprint ranges
	marginTimestampRange = 50                   // type + bound + count growth
	marginAddMessage     = marginTimestamp + marginChangeLength + marginRemainingRange
)

// BufferOptions configure a MessageBuffer.
type BufferOptions struct {
	// Type is the message type.
	Type MessageType
	// WriteKey is sent in a Request when not nil.
	WriteKey *WriteKey
	// Subscription is the Request's subscription flag.
	Subscription SubscriptionFlag
	// ErrorCode is the Response's error code.
	ErrorCode ErrorCode
	// TotalMaxSize defaults to DefaultMaxSize.
	TotalMaxSize int
	// RangesMaxSize defaults to DefaultRangesMaxSize.
	RangesMaxSize int
	// version, for tests only (export_test.go), replaces Version.
	version uint64
}

// MessageBuffer builds a ProtocolMessage within size limits, like the TS
// createProtocolMessageBuffer. Its Can* methods tell whether an addition
// fits; Add* methods fail rather than exceed a limit.
type MessageBuffer struct {
	header       []byte
	msgTimes     TimestampsBuffer
	changes      []byte
	rangeBounds  TimestampsBuffer
	rangeTypes   []byte
	payloads     []byte
	lastInfinite bool
	typ          MessageType
	totalMax     int
	rangesMax    int
}

// NewMessageBuffer starts a message for owner with the header opts describe.
func NewMessageBuffer(owner OwnerID, opts BufferOptions) *MessageBuffer {
	b := &MessageBuffer{typ: opts.Type, totalMax: opts.TotalMaxSize, rangesMax: opts.RangesMaxSize}
	if b.totalMax == 0 {
		b.totalMax = DefaultMaxSize
	}
	if b.rangesMax == 0 {
		b.rangesMax = DefaultRangesMaxSize
	}
	v := opts.version
	if v == 0 {
		v = Version
	}
	b.header = AppendNonNegativeInt(b.header, v)
	b.header = append(b.header, owner[:]...)
	b.header = append(b.header, byte(opts.Type))
	switch opts.Type {
	case Request:
		if opts.WriteKey == nil {
			b.header = append(b.header, 0)
		} else {
			b.header = append(b.header, 1)
			b.header = append(b.header, opts.WriteKey[:]...)
		}
		b.header = append(b.header, byte(opts.Subscription))
	case Response:
		b.header = append(b.header, byte(opts.ErrorCode))
	}
	return b
}

func (b *MessageBuffer) headerAndMessagesSize() int {
	return len(b.header) + b.msgTimes.Len() + len(b.changes)
}

func (b *MessageBuffer) rangesSize() int {
	if b.rangeBounds.Count() == 0 {
		return 0
	}
	return b.rangeBounds.Len() + len(b.rangeTypes) + len(b.payloads) + marginRemainingRange
}

// Size is the size the message would have, counting the ranges margin.
func (b *MessageBuffer) Size() int { return b.headerAndMessagesSize() + b.rangesSize() }

// TotalMaxSize is the message size limit.
func (b *MessageBuffer) TotalMaxSize() int { return b.totalMax }

// HeaderSize is the size of the header alone.
func (b *MessageBuffer) HeaderSize() int { return len(b.header) }

// CanAddMessage reports whether m fits, leaving room for a remaining range.
func (b *MessageBuffer) CanAddMessage(m EncryptedMessage) bool {
	return b.Size()+marginAddMessage+len(m.Change) <= b.totalMax
}

// ErrTooBig is returned when an addition would exceed a size limit.
var ErrTooBig = errors.New("evolu: protocol message size limit exceeded")

// AddMessage appends m. Messages must come in non-decreasing millis order.
func (b *MessageBuffer) AddMessage(m EncryptedMessage) error {
	if err := b.msgTimes.Add(m.Timestamp); err != nil {
		return err
	}
	b.changes = AppendNonNegativeInt(b.changes, uint64(len(m.Change)))
	b.changes = append(b.changes, m.Change...)
	if b.Size() > b.totalMax {
		return ErrTooBig
	}
	return nil
}

// CanSplitRange reports whether 16 more fingerprint ranges fit the ranges limit.
func (b *MessageBuffer) CanSplitRange() bool {
	return b.rangesSize()+marginSplitRange <= b.rangesMax
}

// CanAddTimestampsRangeAndMessage reports whether a Timestamps range holding
// ts, and m when not nil, still fit both limits.
func (b *MessageBuffer) CanAddTimestampsRangeAndMessage(ts *TimestampsBuffer, m *EncryptedMessage) bool {
	newRanges := b.rangesSize() + ts.Len() + marginTimestampRange
	if newRanges > b.rangesMax {
		return false
	}
	if m == nil {
		return true
	}
	return b.headerAndMessagesSize()+newRanges+marginAddMessage+len(m.Change) <= b.totalMax
}

func (b *MessageBuffer) startRange(t RangeType, ub UpperBound) error {
	if b.typ == Broadcast {
		return errors.New("evolu: cannot add a range into a broadcast message")
	}
	if b.lastInfinite {
		return errors.New("evolu: cannot add a range after an InfiniteUpperBound range")
	}
	b.lastInfinite = ub.Infinite
	if ub.Infinite {
		b.rangeBounds.AddInfinite()
	} else if err := b.rangeBounds.Add(ub.Timestamp.Timestamp()); err != nil {
		return err
	}
	b.rangeTypes = AppendNonNegativeInt(b.rangeTypes, uint64(t))
	return nil
}

func (b *MessageBuffer) checkSize(t RangeType) error {
	if b.Size() > b.totalMax {
		return fmt.Errorf("%w: range %d", ErrTooBig, t)
	}
	return nil
}

// AddSkip appends a Skip range.
func (b *MessageBuffer) AddSkip(ub UpperBound) error {
	if err := b.startRange(RangeSkip, ub); err != nil {
		return err
	}
	return b.checkSize(RangeSkip)
}

// AddFingerprint appends a Fingerprint range.
func (b *MessageBuffer) AddFingerprint(ub UpperBound, fp Fingerprint) error {
	if err := b.startRange(RangeFingerprint, ub); err != nil {
		return err
	}
	b.payloads = append(b.payloads, fp[:]...)
	return b.checkSize(RangeFingerprint)
}

// AddTimestamps appends a Timestamps range listing ts.
func (b *MessageBuffer) AddTimestamps(ub UpperBound, ts *TimestampsBuffer) error {
	if err := b.startRange(RangeTimestamps, ub); err != nil {
		return err
	}
	b.payloads = ts.Append(b.payloads)
	return b.checkSize(RangeTimestamps)
}

// AddRange appends r.
func (b *MessageBuffer) AddRange(r Range) error {
	switch r.Type {
	case RangeSkip:
		return b.AddSkip(r.UpperBound)
	case RangeFingerprint:
		return b.AddFingerprint(r.UpperBound, r.Fingerprint)
	case RangeTimestamps:
		var tb TimestampsBuffer
		for _, t := range r.Timestamps {
			if err := tb.Add(t.Timestamp()); err != nil {
				return err
			}
		}
		return b.AddTimestamps(r.UpperBound, &tb)
	}
	return fmt.Errorf("evolu: invalid range type %d", r.Type)
}

// HasRanges reports whether any range was added.
func (b *MessageBuffer) HasRanges() bool { return b.rangeBounds.Count() > 0 }

// Bytes returns the encoded message. It fails when ranges were added but
// the last one is not infinite.
func (b *MessageBuffer) Bytes() ([]byte, error) {
	if b.rangeBounds.Count() > 0 && !b.lastInfinite {
		return nil, errors.New("evolu: the last range's upper bound must be infinite")
	}
	out := make([]byte, 0, b.Size())
	out = append(out, b.header...)
	out = b.msgTimes.Append(out)
	out = append(out, b.changes...)
	if b.rangeBounds.Count() > 0 {
		out = AppendNonNegativeInt(out, b.rangeBounds.Count())
		out = b.rangeBounds.appendWithoutCount(out)
		out = append(out, b.rangeTypes...)
		out = append(out, b.payloads...)
	}
	return out, nil
}

// clone returns a deep copy of b.
func (b *MessageBuffer) clone() MessageBuffer {
	c := *b
	c.header = slices.Clone(b.header)
	c.msgTimes = b.msgTimes.clone()
	c.changes = slices.Clone(b.changes)
	c.rangeBounds = b.rangeBounds.clone()
	c.rangeTypes = slices.Clone(b.rangeTypes)
	c.payloads = slices.Clone(b.payloads)
	return c
}
