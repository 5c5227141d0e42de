package suite

import "errors"

// Sentinel errors. Functions wrap them with %w and detail; test with errors.Is.
var (
	// ErrVVTooLong: a context or base has more than MaxVVEntries entries (§9.2).
	ErrVVTooLong = errors.New("tandem/suite: version vector has more than 1024 entries")
	// ErrVVUnsorted: a version vector is not sorted by device ID, or repeats one (§5.5).
	ErrVVUnsorted = errors.New("tandem/suite: version vector not sorted by device or has a duplicate device")
	// ErrHLCRange: an HLC's millis does not fit in 48 bits (§9.1).
	ErrHLCRange = errors.New("tandem/suite: HLC millis exceeds 48 bits")
	// ErrBadOp: an op is not 1..4 (§5.5).
	ErrBadOp = errors.New("tandem/suite: unknown write op")
	// ErrInventory: inventory bytes are not canonical (§8.3).
	ErrInventory = errors.New("tandem/suite: malformed snapshot inventory")
	// ErrEnvelope: an envelope could not be opened (§5.4); the concrete
	// *EnvelopeError says why.
	ErrEnvelope = errors.New("tandem/suite: cannot open envelope")
	// ErrBackupKey: a backup key could not be parsed (§6.3).
	ErrBackupKey = errors.New("tandem/suite: invalid backup key")
	// ErrBadKey: a public key is not a valid key of its type.
	ErrBadKey = errors.New("tandem/suite: invalid public key")
	// ErrSignature: a signature did not verify under VerifyStrict.
	ErrSignature = errors.New("tandem/suite: invalid signature")
)
