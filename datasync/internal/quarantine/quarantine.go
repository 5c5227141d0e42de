// Package quarantine keeps the crash record of data-sync-v1 blobs in flight
// to the document engine (§Delivery: "A blob is judged before the document
// engine sees it, and blobs in flight are recorded on disk so one that ends
// the process cannot end it again on every retry. See ADR 0019.").
//
// Before a remote blob (a delta's or snap's bytes, or a snapshot that came
// over the media path) is handed to the engine, its digest
// ([attach.Digest]: the first 16 bytes of its SHA-256, 32 lowercase hex) is
// recorded, durably, as in flight; the record is cleared when the engine
// returns. A process that dies inside the engine leaves the record behind.
// The next process to open the ledger finds it and quarantines that
// digest: the blob is refused without being handed to the engine again, and
// the exchange reports it to the application.
//
// [Dir] is the on-disk ledger; [Memory] is an in-memory one for unit tests,
// whose [Memory.Restart] stands in for a process that died.
package quarantine

import (
	"errors"
	"fmt"

	"github.com/ferry-sync/ferry/datasync/internal/attach"
)

// ErrQuarantined means a blob was in flight to the engine when an earlier
// process ended, so it is never handed to the engine again.
var ErrQuarantined = errors.New("datasync/quarantine: blob quarantined: it was being imported when the process ended")

// ErrDigest means a digest is not 32 lowercase hex characters.
var ErrDigest = errors.New("datasync/quarantine: digest is not 32 lowercase hex")

// MaxQuarantined bounds the quarantine list. When a crash would quarantine
// one more, the oldest quarantined digest is dropped (its blob is handed to
// the engine again the next time it arrives, and is quarantined again if it
// crashes again). docs/decisions/datasync-quarantine.md.
const MaxQuarantined = 16

// Entry is a quarantined blob: its digest and the document it was for.
type Entry struct {
	Digest string
	Doc    string
}

// Ledger records blobs in flight to a document engine. Implementations are
// safe for concurrent use; the same digest may be in flight more than once
// at a time, and stays recorded until the last of them ends.
type Ledger interface {
	// Begin records that the blob with this digest is about to be handed
	// to the engine for doc, and returns once the record is durable. It
	// returns an error wrapping ErrQuarantined, recording nothing, when
	// the digest is quarantined; any other error means the record could
	// not be made and the blob must not be handed to the engine either.
	Begin(digest, doc string) error
	// End clears the record of one Begin once the engine has returned.
	End(digest string) error
	// Quarantined lists the quarantined blobs, sorted by digest.
	Quarantined() []Entry
	// Release lifts the quarantine of digest (for example after the
	// engine that crashed on it was fixed); its blob is imported the next
	// time it arrives.
	Release(digest string) error
}

// Digest is the digest a ledger records for blob bytes ([attach.Digest]).
func Digest(blob []byte) string { return attach.Digest(blob) }

func checkDigest(d string) error {
	if len(d) != 32 {
		return fmt.Errorf("%w: %q", ErrDigest, d)
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("%w: %q", ErrDigest, d)
		}
	}
	return nil
}
