// Package roster is the pure authorization logic of Tandem collections
// (tandem.txt §7, §8, §9.4, with tandem-gaps.md): it decides, from signed
// bytes alone, who may write what, in which epoch, and when a collection is
// dead. No network, no hub, no goroutines.
//
// # Pieces
//
//   - Statement: one owner-signed assign to field s of _roster, its value
//     bytes kept exactly as signed (§9.4) and read with the strict JSON
//     reader tandem/tjson (State, ParseState, §8.1, §10.5).
//   - Roster: an immutable, validated chain from the genesis to a head, with
//     each statement's source epoch and the verified inventories.
//   - Chain: what a device runs per collection: it keeps every statement the
//     owner signed, holds out-of-order ones, tells drafts from announced
//     statements (Origin, Announce), follows the one successor, declares the
//     collection dead, assembles inventories from fragments, and judges data
//     writes (CheckWrite, or CheckVerified for a write a record.Validator
//     has verified, so that its signature is checked once).
//   - Owner operations, pure functions that sign and return without
//     publishing: Genesis, AddMember, ChangeRole, RemoveMember, Rotate,
//     Delete. An epoch start returns the new key, its commitment and the
//     fixed inventory (Change).
//   - Inventories (§8.3, §10.5, §10.6): BuildInventory, Split, DecodeFragment,
//     Fragment.Encode; assembly inside Chain.AddFragment.
//
// # Rules, sections and where they are enforced
//
//	Rule                                                      §            Function
//	collection ID = first 16 bytes of the genesis ID          7.1          CollectionID, NewRoster, Chain.Add
//	epoch ID = full ID of its starting statement              7.1          Roster.Epoch, Roster.SourceEpoch
//	genesis: zero scope, zero ref, owner alone, n=0, key.n=0,
//	  commitment, 16-byte nonce, no snapshot, not deleted      7.1, 8.1     ValidateGenesis, Genesis
//	signature strictly valid                                  5.5          NewStatement (suite.VerifyWrite)
//	author is the genesis owner                               8.2          Roster.Validate (ErrAuthor); Chain.Add drops others
//	collection scope                                          8.2          checkShape (ErrScope)
//	_roster record, field s, assign                           8.2, 9.4     checkShape (ErrRecord, ErrField, ErrOp)
//	empty context, base and element                           8.2          checkShape (ErrContext, ErrElement)
//	ref = the parent statement                                9.4          Roster.Validate (ErrRef)
//	state is the JSON of §8.1, read one way                   8.1, 10.5    ParseState (ErrState)
//	n exactly one higher                                      8.2          Roster.Validate (ErrSequence)
//	unique member IDs                                         8.2          checkMembers (ErrDuplicate)
//	exactly one owner, the genesis owner                      8.1, 8.2     checkMembers (ErrOwner)
//	only owner, writer, reader                                8.2          checkMembers (ErrRole)
//	staying members keep uka, name, via                       8.1, 8.2     checkStayers (ErrMemberChanged)
//	a deleted statement has no successor                      8.2, 11.9    Roster.Validate (ErrAfterDeleted)
//	removal or demotion starts an epoch                       7.2, 8.2     checkSameEpoch (ErrNeedsEpoch)
//	epoch start: counter +1, prev = parent's commitment       8.2          checkEpochStart (ErrEpochCounter)
//	epoch start: commitment not earlier in the roster         8.2          checkEpochStart (ErrCommitReused)
//	epoch start: commits a snapshot inventory                 8.2, 8.3     checkEpochStart (ErrSnapshot)
//	epoch start adds no member                                8.2          checkEpochStart (ErrEpochAdds)
//	same epoch keeps key and snapshot commitments             8.2          checkSameEpoch (ErrSameEpoch)
//	out-of-order statements held until their parent          9.4          Chain.Add, Chain.advance
//	every owner-signed statement kept                         9.4          Chain.Add, Chain.Statements
//	two owner-signed successors ⇒ dead, even if invalid       9.4          Chain.markCounting, Chain.Dead
//	drafts are not successors until announced                 9.4, 11.6    Origin, Chain.Announce, Chain.markCounting
//	holding limits, 30 days by default, injectable clock      9.4, 10.6    Limits, Options.Now, Chain.Expire
//	data write signature strictly valid                       5.5          Chain.CheckWrite; record.Validator.Verify for CheckVerified
//	write names a followed statement, else held/rejected      8.3          Chain.judgeWrite, Chain.followed
//	held writes wait within limits, released when judgeable   8.3, 9.4     HoldError, Pending, Chain.Resolved
//	author listed as owner or writer; readers rejected        8.3          Chain.authorized (ErrNotMember, ErrReader)
//	_meta only by the owner; no delete of a named record      7.3, 8.3     Chain.authorized, Chain.checkWriteShape
//	nothing written under a deleted statement                 11.9         Chain.authorized (ErrAfterDeleted)
//	source epoch: back to the first same-commitment statement 8.3          Roster.SourceEpoch
//	eligible in E: source epoch is E, or write and record
//	  listed in E's inventory and statement an ancestor of E   8.3          Chain.eligibleIn
//	missing inventory holds the epoch                         8.3          Chain.eligibleIn (ErrHeld, ErrNoInventory)
//	inventory: kept writes and tombstones, carry forward
//	  unseen listed entries, canonical bytes                   8.3, 11.6    BuildInventory, RecordState
//	current inventory needed to start the next epoch          8.3          Roster.finishEpoch (ErrCarryForward)
//	fragments under the message limit                         10.5, 10.6   Split, MessageSize
//	one payload form; part < parts; strict JSON               10.5         DecodeFragment
//	duplicates harmless, versions held apart, assembly
//	  used only if its hash is the snapshot commitment         8.3, 10.5    fragmentStore, Chain.AddFragment, Roster.WithInventory
//	fragment of another epoch than its channel rejected       8.3          Chain.AddFragmentIn (ErrNotEpoch)
//	fragment memory bounded by bytes received; groups,
//	  versions and search bounded; completing part always used 10.5, 10.6   fragmentStore (ErrLimit: read again later)
//	data write with a zero ref rejected (only a genesis)      7.1, 9.1     Chain.checkWriteShape (ErrRef)
//
// Where the draft is silent, the decisions are recorded in
// docs/decisions/tandem-roster-statement-json.md (statement JSON and the
// genesis), docs/decisions/tandem-roster-chain.md (drafts, stalls, the
// genesis as the only source of the owner key) and
// docs/decisions/tandem-roster-inventory.md (inventories and fragments).
//
// # Verdicts
//
// Errors wrap ErrHeld (keep and retry when a dependency arrives),
// ErrRejected (final) or ErrDead (stop), plus one rule sentinel; use
// errors.Is. Bad input never changes state: a rejected statement is not
// stored, and a chain's followed roster only ever grows.
//
// Everything here is written by hand on top of tandem/suite (signatures,
// canonical inventory bytes) and tandem/tjson (strict JSON): no library
// implements Tandem's roster.
package roster
