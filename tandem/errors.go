package tandem

import (
	"errors"
	"fmt"
)

// Code says what kind of failure an *Error is.
type Code int

// Error codes. Messages shown to a person come from Error.Message.
const (
	CodeInternal      Code = iota // a bug, or damage no code foresees
	CodeOffline                   // the hub cannot be reached now; local work goes on (§13.3)
	CodeAuth                      // the hub refused the credential (§13.3)
	CodeLocked                    // another process has the device open
	CodeNewerVersion              // the device was written by a newer Ferry
	CodeStorage                   // the device's disk failed (full, read-only, damaged)
	CodeNotFound                  // no such collection or record
	CodeNotWritable               // the collection cannot be written now (role, state)
	CodeInvalid                   // bad input from the caller
	CodeExists                    // the directory already holds a device
	CodeNoHub                     // no hub is connected yet
	CodeNoDevice                  // the directory holds no device yet
	CodeWrongIdentity             // the secret does not match the device's data
	CodeBackupKey                 // a backup key that does not check (§6.3)
	CodeTooLarge                  // a value too large for one message (§10.6)
	CodeInFlight                  // another device of the owner has a sharing change in flight (§11.7)
	CodeExpired                   // a pairing code or invite past its expiry (§13.3)
	CodeDifferentHub              // a code for another hub than the device's (§11.2, §13.3)
	CodePairing                   // a pairing that cannot go on: finished, declined, or interfered with (§6.3)
	CodeDamaged                   // the device's files are damaged or incomplete; the message names the file and the way back
)

// codeNames are the codes' names (String, MarshalText): stable words for
// logs and JSON.
var codeNames = map[Code]string{
	CodeInternal: "internal", CodeOffline: "offline", CodeAuth: "auth", CodeLocked: "locked",
	CodeNewerVersion: "newer_version", CodeStorage: "storage", CodeNotFound: "not_found",
	CodeNotWritable: "not_writable", CodeInvalid: "invalid", CodeExists: "exists", CodeNoHub: "no_hub",
	CodeNoDevice: "no_device", CodeWrongIdentity: "wrong_identity", CodeBackupKey: "backup_key",
	CodeTooLarge: "too_large", CodeInFlight: "in_flight", CodeExpired: "expired",
	CodeDifferentHub: "different_hub", CodePairing: "pairing", CodeDamaged: "damaged",
}

// String is the code's name ("offline", "not_found", ...).
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code_%d", int(c))
}

// MarshalText writes the code's name, so JSON and logs show words.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Error is every error the tandem package returns. Message is one line for
// a person, with what to do; Err is the cause, for logs and errors.Is.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return "tandem: " + e.Message
	}
	return fmt.Sprintf("tandem: %s: %v", e.Message, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same Code, so that
// errors.Is(err, &tandem.Error{Code: tandem.CodeAuth}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == "" && t.Err == nil
}

// CodeOf returns the Code of the *Error in err's chain, or CodeInternal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// The §13.3 messages.
const (
	msgAuth    = "Sync access was revoked or changed. Reconnect to keep syncing."
	msgOffline = "The sync hub can't be reached; everything keeps working here and syncs when it's back."
)

func newErr(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}
