package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/ferry-sync/ferry/evolu/internal/protocol"
)

// RelayCode names why a relay refused a sync or did not answer it.
type RelayCode uint8

// The relay codes: the first four are the relay's error answers
// (ProtocolWriteKeyError, ProtocolWriteError, ProtocolQuotaError,
// ProtocolSyncError), the last two what the client finds itself.
const (
	RelayWriteKey RelayCode = iota + 1 // the write key is not the owner's
	RelayWrite                         // the relay failed to store the changes
	RelayQuota                         // the owner's quota at the relay is used up
	RelaySync                          // the relay could not reconcile
	RelayVersion                       // the relay speaks another protocol version
	RelayNoReply                       // no reply within the reply timeout
)

var relayCodeNames = [...]string{
	RelayWriteKey: "write-key",
	RelayWrite:    "write",
	RelayQuota:    "quota",
	RelaySync:     "sync",
	RelayVersion:  "version",
	RelayNoReply:  "no-reply",
}

// String is the code's name, as MarshalText writes it.
func (c RelayCode) String() string {
	if int(c) < len(relayCodeNames) && relayCodeNames[c] != "" {
		return relayCodeNames[c]
	}
	return fmt.Sprintf("RelayCode(%d)", uint8(c))
}

// MarshalText writes the code's name, for logs and JSON.
func (c RelayCode) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// RelayError is every refusal of a relay Sync and Run report, and a relay
// that does not answer. Check it with errors.As and switch on Code. Sync and
// Run return it; Run does not retry it.
type RelayError struct {
	Code  RelayCode
	Owner OwnerID
	// After is how long the client waited, for RelayNoReply.
	After time.Duration
	err   error
}

func (e *RelayError) Error() string {
	switch e.Code {
	case RelayNoReply:
		return fmt.Sprintf("evolu client: the relay sent no reply within %s (is it an Evolu protocol v1 relay? a relay does not answer a request it cannot decode)", e.After)
	case RelayVersion:
		return fmt.Sprintf("evolu client: owner %s: the relay speaks another protocol version: %v", e.Owner, e.err)
	}
	return fmt.Sprintf("evolu client: owner %s: the relay refused: %s", e.Owner, e.Code)
}

// Unwrap returns the protocol error the code was read from, if any.
func (e *RelayError) Unwrap() error { return e.err }

// relayError translates the protocol's refusals into a *RelayError, once,
// where Sync and Run return; other errors pass unchanged.
func relayError(err error) error {
	var re *protocol.ResponseError
	if errors.As(err, &re) {
		code := map[protocol.ErrorCode]RelayCode{
			protocol.WriteKeyError: RelayWriteKey,
			protocol.WriteError:    RelayWrite,
			protocol.QuotaError:    RelayQuota,
			protocol.SyncError:     RelaySync,
		}[re.Code]
		if code == 0 {
			code = RelaySync
		}
		return &RelayError{Code: code, Owner: re.OwnerID, err: err}
	}
	var ve *protocol.VersionError
	if errors.As(err, &ve) {
		return &RelayError{Code: RelayVersion, Owner: ve.OwnerID, err: err}
	}
	return err
}
