package roster

import "errors"

// Verdict classes. Every error this package returns for a statement, a write
// or a fragment wraps at most one of them; test with errors.Is.
var (
	// ErrHeld: the object depends on something not yet known (a parent
	// statement, an epoch's statement or its inventory). Keep it and try
	// again when the dependency arrives (§8.3, §9.4). It is not evidence of
	// forgery.
	ErrHeld = errors.New("tandem/roster: held until a dependency arrives")
	// ErrRejected: the object is invalid and must be discarded. Whether a
	// write is valid never changes (§9.3), so a rejection is final.
	ErrRejected = errors.New("tandem/roster: rejected")
	// ErrDead: the collection is dead (§9.4); processing stops.
	ErrDead = errors.New("tandem/roster: collection is dead")
	// ErrLimit: a configurable holding limit was reached; nothing was stored.
	ErrLimit = errors.New("tandem/roster: holding limit reached")
)

// ErrInvalidStatement is wrapped by every error reporting that a roster
// statement breaks a rule of §8.2 or §9.4. Each rule also has its own
// sentinel below, so a test can check that exactly that rule was broken.
var ErrInvalidStatement = errors.New("tandem/roster: invalid roster statement")

// Statement rules (§7.1, §8.1, §8.2, §9.4, §11.9). See the package doc for
// the full map of rule → section → function.
var (
	ErrSignature      = errors.New("signature does not verify (§5.5)")
	ErrUnverified     = errors.New("statement not made by NewStatement: signature never checked (§5.5)")
	ErrAuthor         = errors.New("statement not authored by the genesis owner (§8.2)")
	ErrScope          = errors.New("wrong scope (§5.5, §7.1, §8.2)")
	ErrRecord         = errors.New("not the _roster record (§8.2)")
	ErrField          = errors.New("not field s (§8.2)")
	ErrOp             = errors.New("not an assign (§8.2)")
	ErrContext        = errors.New("context or base not empty (§8.2)")
	ErrElement        = errors.New("element not empty (§8.2)")
	ErrRef            = errors.New("ref does not name the parent statement (§9.4)")
	ErrState          = errors.New("statement state is not valid JSON of §8.1 (§10.5)")
	ErrSequence       = errors.New("n is not exactly one higher (§8.2)")
	ErrDuplicate      = errors.New("member listed twice (§8.2)")
	ErrOwner          = errors.New("not exactly one owner equal to the genesis owner (§8.1, §8.2)")
	ErrRole           = errors.New("role is not owner, writer or reader (§8.2)")
	ErrMemberChanged  = errors.New("a staying member's uka, name or via changed (§8.1, §8.2)")
	ErrAfterDeleted   = errors.New("a deleted statement has no successor (§8.2, §11.9)")
	ErrEpochAdds      = errors.New("a statement that starts an epoch adds a member (§8.2)")
	ErrCommitReused   = errors.New("epoch commitment occurs earlier in the roster (§8.2)")
	ErrSnapshot       = errors.New("epoch start does not commit a snapshot inventory (§8.2, §8.3)")
	ErrEpochCounter   = errors.New("epoch counter or prev commitment is not the parent's plus one (§8.2)")
	ErrSameEpoch      = errors.New("same-epoch statement changes the key or snapshot commitment (§8.2)")
	ErrNeedsEpoch     = errors.New("removal or demotion without starting an epoch (§7.2, §8.2)")
	ErrGenesis        = errors.New("genesis does not have the form of §7.1")
	ErrCollectionID   = errors.New("genesis ID does not give this collection ID (§7.1)")
	ErrNotRosterWrite = errors.New("write is not a _roster statement (§9.4)")
)

// Data-write eligibility (§8.3).
var (
	ErrUnknownStatement = errors.New("named roster statement not known yet (§8.3)")
	ErrNotFollowed      = errors.New("named roster statement is not in the followed roster (§8.3)")
	ErrNotMember        = errors.New("author not listed by the named statement (§8.3)")
	ErrReader           = errors.New("readers' writes are rejected (§8.3)")
	ErrMetaNotOwner     = errors.New("_meta is written only by the owner (§7.3, §8.3)")
	ErrNamedDelete      = errors.New("delete on a named record (§7.3)")
	ErrNotEpoch         = errors.New("channel is not an epoch of the followed roster (§7.1, §8.3)")
	ErrNotEligible      = errors.New("write is neither of this epoch nor listed in its inventory (§8.3)")
	ErrNoInventory      = errors.New("epoch inventory not assembled yet (§8.3)")
)

// Inventories and fragments (§8.3, §10.5, §10.6).
var (
	ErrFragment       = errors.New("malformed inventory fragment (§10.5)")
	ErrInventoryHash  = errors.New("inventory does not match the statement's snapshot commitment (§8.3)")
	ErrMessageLimit   = errors.New("message size limit out of range (§10.6)")
	ErrStateMismatch  = errors.New("operation does not apply to this roster (§8.2)")
	ErrCarryForward   = errors.New("current epoch inventory unknown; cannot start the next epoch (§8.3)")
	ErrNotOwnerSigner = errors.New("signing key is not the collection owner's (§8.1)")
)
