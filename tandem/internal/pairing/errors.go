package pairing

import "errors"

// Errors of a pairing session. Hub errors (hub.ErrAuth, a broken
// connection) are returned as the hub gave them.
var (
	// ErrExpired: the QR code is past its expiry (§6.3: 120 s).
	ErrExpired = errors.New("pairing: code expired")
	// ErrClosed: the session was closed.
	ErrClosed = errors.New("pairing: closed")
	// ErrUsed: the offer approved a device already, or the join
	// installed one.
	ErrUsed = errors.New("pairing: already used")
	// ErrDeclined: the request was declined.
	ErrDeclined = errors.New("pairing: request declined")
	// ErrInterfered: a challenge to this device's request did not check
	// against the user ID in the QR code.
	ErrInterfered = errors.New("pairing: a challenge with a bad signature")
	// ErrBadKey: the new device's one-time key does not seal.
	ErrBadKey = errors.New("pairing: the new device's key is not usable")
	// ErrStopped: the caller's context ended a wait.
	ErrStopped = errors.New("pairing: stopped")
	// ErrLocal: no randomness, or a message that cannot be written or
	// sealed: a failure on this device, not the hub's.
	ErrLocal = errors.New("pairing: local failure")

	// ErrNotPayload: the text is not a pairing QR payload.
	ErrNotPayload = errors.New("pairing: not a pairing code")
	// ErrNewerPayload: a pairing payload of a later version.
	ErrNewerPayload = errors.New("pairing: a pairing code of a later version")
	// ErrPayloadHub: the payload's hub descriptor does not read.
	ErrPayloadHub = errors.New("pairing: the pairing code names no usable hub")
)

// errDeadline ends a wait that reached its deadline.
var errDeadline = errors.New("pairing: deadline reached")
