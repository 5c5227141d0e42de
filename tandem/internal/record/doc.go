// Package record implements Tandem's data writes and their merge
// (tandem.txt §9): validation of a write (§9.1, §5.5, §7.3), the hybrid
// logical clock (§9.1), supersession exactly as tandem-gaps.md
// "Supersession (§9.2)" defines it, the record state built on it (§9.2,
// §9.3), building writes (§9.2), signing again into a new epoch (§11.6),
// and a canonical encoding of a state.
//
// # Writes and validity
//
// A Write is a validated data write: the signed suite.WriteBody, its write
// ID, its signature and e(x), the counter of its source epoch. The roster
// layer (tandem/roster) decides whether the author may write under the
// write's ref and computes e(x) from it; this package checks the write itself
// (Validator.Validate): scope, signature through suite.VerifyStrict, vector
// limits, op/element/value shape, reserved names and deletes of named
// records. Signing is suite.SignWrite; nothing here signs or verifies on its
// own. Validity depends only on the write and the Rules, never on arrival
// order.
//
// A caller that learns e(x) only after the roster has judged the write
// splits Validate in two: Validator.Verify makes every check, the signature
// included, and returns a Verified; Verified.InEpoch (called by
// roster.Chain.CheckVerified) binds e(x) without verifying again. A
// Verified exists only as the result of a successful Verify; the zero value
// is refused (ErrUnverified). This is how a client verifies each received
// signature once (docs/benchmarks/tandem-client.md).
//
// # Registers
//
// Supersession applies within one register: the assign writes of a
// (record, field); the add and remove writes of a (record, field, element);
// the delete writes of a (record, field), since deletes are writes to a
// field like any other (§9.2). A record with a kept delete is a tombstone:
// it shows and publishes only its deletes (§9.2 "whatever else happens to
// it", §12.3). Its other writes are still merged, hidden, because a valid
// "_name" write proves a record named, and a delete of a named record is
// invalid whether or not the app declared the name (§7.3): once a state
// holds the record's "_name" write it keeps no delete of it, and shows what
// a device that saw the name first shows. See
// docs/decisions/tandem-record-registers.md and tandem-record-tombstone.md.
//
// # Invariants the tests check
//
//   - ≤ and supersession are exactly the gaps file's definitions (compared
//     with a naive transcription on random and adversarial vectors), and
//     supersession is irreflexive, asymmetric and transitive for any vectors:
//     honest, self-covering, mutually covering, covering the future.
//   - A write never supersedes a write of a later epoch.
//   - The state keeps exactly the maximal writes of everything it has seen
//     (compared with a brute-force oracle); Merge is commutative,
//     associative and idempotent, and the merge of two states is the state
//     of the union of their writes.
//   - Convergence: in 10,000 random schedules of honest and malicious
//     writers over several devices and up to three epochs (same dot twice,
//     contexts covering each other and the future, replays, duplicates,
//     re-signed writes, any delivery order, states merged from parts), every
//     replica that saw the same writes encodes to the same bytes.
//   - A rejected write returns a typed error and changes no state; decoding
//     never panics and accepts only canonical bytes (FuzzDecodeState).
//   - An honest write built by State.Build supersedes exactly what its
//     device had seen of the register; past 1,024 entries it covers what
//     fits, deterministically, and reports the field unsettleable.
//   - HLCs from a Clock are strictly increasing, follow wall time, never
//     adopt another device's values, and roll the counter over into millis.
//   - Signing again is deterministic (same bytes and write ID on every
//     device of the author), and two re-signed writes come back as a
//     conflict.
//
// Written by hand, since no library does it: the version-vector algebra,
// the supersession order and the register state. Cryptography and the
// signed byte layout come from tandem/suite.
package record
