package protocol

import (
	"errors"
	"fmt"
)

// ErrInvalidData is matched (errors.Is) by every InvalidDataError.
var ErrInvalidData = errors.New("evolu: ProtocolInvalidDataError")

// InvalidDataError is ProtocolInvalidDataError: a malformed ProtocolMessage
// or EncryptedDbChange, with its bytes as Data and the decoding error as Err.
type InvalidDataError struct {
	Data []byte
	Err  error
}

// Error implements error.
func (e *InvalidDataError) Error() string {
	return fmt.Sprintf("evolu: ProtocolInvalidDataError: %v (%d bytes)", e.Err, len(e.Data))
}

// Unwrap returns the decoding error.
func (e *InvalidDataError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidData.
func (e *InvalidDataError) Is(target error) bool { return target == ErrInvalidData }

func invalid(data []byte, err error) error { return &InvalidDataError{Data: data, Err: err} }

// VersionError is ProtocolVersionError: the peer speaks another version.
// IsInitiator reports that the initiator (this side) is the older one.
type VersionError struct {
	OwnerID     OwnerID
	Version     uint64
	IsInitiator bool
}

// Error implements error.
func (e *VersionError) Error() string {
	return fmt.Sprintf("evolu: ProtocolVersionError: owner %s: peer version %d, ours %d", e.OwnerID, e.Version, Version)
}

// ResponseError is a Response whose header carries an error code other than
// NoError: ProtocolWriteKeyError, ProtocolWriteError, ProtocolQuotaError or
// ProtocolSyncError, with its OwnerID.
type ResponseError struct {
	OwnerID OwnerID
	Code    ErrorCode
}

// Error implements error.
func (e *ResponseError) Error() string {
	return fmt.Sprintf("evolu: %s: owner %s", e.Code, e.OwnerID)
}

// String names the code as the TS error types do.
func (c ErrorCode) String() string {
	switch c {
	case NoError:
		return "NoError"
	case WriteKeyError:
		return "ProtocolWriteKeyError"
	case WriteError:
		return "ProtocolWriteError"
	case QuotaError:
		return "ProtocolQuotaError"
	case SyncError:
		return "ProtocolSyncError"
	}
	return fmt.Sprintf("ErrorCode(%d)", byte(c))
}

// TimestampMismatchError is ProtocolTimestampMismatchError: the timestamp
// inside a decrypted change differs from the message's timestamp.
type TimestampMismatchError struct {
	Expected, Timestamp Timestamp
}

// Error implements error.
func (e *TimestampMismatchError) Error() string {
	return fmt.Sprintf("evolu: ProtocolTimestampMismatchError: expected %s, got %s", e.Expected, e.Timestamp)
}

// ChangeTooLargeError is ProtocolChangeTooLargeError: sync skipped a stored
// change that cannot fit an empty message after a pending Skip range.
type ChangeTooLargeError struct {
	OwnerID   OwnerID
	Timestamp Timestamp
	Size      int
}

// Error implements error.
func (e *ChangeTooLargeError) Error() string {
	return fmt.Sprintf("evolu: ProtocolChangeTooLargeError: owner %s: change %s of %d bytes skipped", e.OwnerID, e.Timestamp, e.Size)
}

// QuotaExceededError is returned by a Storage's WriteMessages when the
// owner's quota would be exceeded (StorageQuotaError); the relay answers
// ProtocolQuotaError.
type QuotaExceededError struct {
	OwnerID OwnerID
}

// Error implements error.
func (e *QuotaExceededError) Error() string {
	return fmt.Sprintf("evolu: StorageQuotaError: owner %s", e.OwnerID)
}
