package record

import "errors"

// Sentinel errors. Functions wrap them with %w and detail; test with
// errors.Is. A write rejected with any of them changes no state.
var (
	// ErrSignature: the write's signature does not verify under
	// suite.VerifyStrict against its author (§5.5).
	ErrSignature = errors.New("tandem/record: invalid write signature")
	// ErrUnverified: a Verified that Validator.Verify did not produce (nil,
	// or the zero value) was offered as a verified write.
	ErrUnverified = errors.New("tandem/record: write not verified by Validator.Verify")
	// ErrMalformed: the write cannot be signed as given: unknown op, HLC
	// millis beyond 48 bits, or a context or base that is unsorted, repeats a
	// device or has more than 1,024 entries (§5.5, §9.1, §9.2).
	ErrMalformed = errors.New("tandem/record: malformed write")
	// ErrOpShape: element or value does not fit the op: an element on assign
	// or delete, a value on add, remove or delete (§5.5, §9.1).
	ErrOpShape = errors.New("tandem/record: element or value inconsistent with op")
	// ErrField: the field name is not valid UTF-8 (§9.1).
	ErrField = errors.New("tandem/record: field name is not UTF-8")
	// ErrReservedField: the field name starts with "_" and is not a valid
	// "_name" write (§7.3, §9.1).
	ErrReservedField = errors.New("tandem/record: reserved field name")
	// ErrNamedDelete: a delete write on a named record (§7.3, §9.2).
	ErrNamedDelete = errors.New("tandem/record: delete on a named record")
	// ErrReservedRecord: a data write to the _roster record, which holds
	// roster statements only (§7.3, §9.4).
	ErrReservedRecord = errors.New("tandem/record: data write to _roster")
	// ErrScope: the write belongs to another collection or home (§5.5).
	ErrScope = errors.New("tandem/record: write for another scope")
	// ErrDeleted: a write was requested on a record that has a tombstone
	// (§9.2): undeleting means creating a new record.
	ErrDeleted = errors.New("tandem/record: record is deleted")
	// ErrNotAuthor: the signing key is not the author of the write being
	// signed again (§11.6).
	ErrNotAuthor = errors.New("tandem/record: key is not the write's author")
	// ErrEpoch: a write would be signed again into an epoch that is not later
	// than its own (§11.6), or built for an epoch earlier than writes it must
	// cover.
	ErrEpoch = errors.New("tandem/record: epoch out of order")
	// ErrVectorLimit: signing again would need a base of more than 1,024
	// entries; the work is kept for the app instead (§9.2, §11.6).
	ErrVectorLimit = errors.New("tandem/record: base would exceed 1024 entries")
	// ErrWriter: a Writer lacks a valid Ed25519 private key or a Clock.
	ErrWriter = errors.New("tandem/record: writer needs a signing key and a clock")
	// ErrClock: the HLC cannot advance: millis would pass 2^48-1 (§9.1).
	ErrClock = errors.New("tandem/record: HLC exhausted")
	// ErrEncoding: serialized state bytes are truncated, malformed or not
	// canonical.
	ErrEncoding = errors.New("tandem/record: malformed state encoding")
)
