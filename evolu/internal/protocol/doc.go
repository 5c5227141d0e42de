// Package protocol implements version 1 of the Evolu Protocol: the binary
// codec of a ProtocolMessage, the Timestamp and its 16-byte sortable form,
// fingerprints, and range-based set reconciliation (RBSR) over any Storage.
//
// The reference for every byte is the TypeScript package @evolu/common
// (src/local-first/Protocol.ts, Storage.ts, Timestamp.ts, src/Bytes.ts) and
// the specification in evolu-protocol.txt; section names in comments refer
// to that specification. This package is written by hand because no Go
// library implements the Evolu wire format.
//
// # Message layout
//
//	Header
//	  version            NonNegativeInt (varint), always first
//	  OwnerId            16 bytes, always second
//	  messageType        1 byte: 0 Request, 1 Response, 2 Broadcast
//	  Request:  hasWriteKey 1 byte (0|1), [WriteKey 16 bytes], subscriptionFlag 1 byte (0|1|2)
//	  Response: errorCode 1 byte (0..4)
//	Messages
//	  timestamps         TimestampsBuffer with count
//	  changes            per message: NonNegativeInt length, bytes
//	Ranges (optional: absent when no bytes follow the messages)
//	  count              NonNegativeInt
//	  upper bounds       TimestampsBuffer of count-1 timestamps without count;
//	                     the last range's bound is infinite and not encoded
//	  types              count NonNegativeInts: 0 Skip, 1 Fingerprint, 2 Timestamps
//	  payloads           Fingerprint: 12 bytes; Timestamps: TimestampsBuffer with count
//
// A TimestampsBuffer is: count (NonNegativeInt, omitted for range bounds),
// count delta-encoded millis (NonNegativeInt each), run-length encoded
// counters (value NonNegativeInt, run NonNegativeInt), run-length encoded
// NodeIds (value 8 bytes, run NonNegativeInt).
//
// Decoding never panics: every malformed input yields an error wrapping
// ErrInvalidData.
package protocol
