// Package client is a minimal Tandem client engine (tandem.txt) for one
// user's devices and the collections that user owns: create a collection,
// edit its records offline, and keep every device of the user in sync
// through the hub (§10).
//
// # Scope
//
// In scope: one user (one secret, §5.3) with any number of devices; each
// Device has its own device ID and HLC (§9.1) and keeps the full merged
// state of home (§6.2) and of every collection it follows (§12.1).
// Collections are created by the user (§7.1) and stay private: the roster
// has one member, the owner, and epoch 0 is the only epoch.
//
// Out of scope, and not attempted: sharing with other users (§11: invites,
// join requests, grants, key requests, leaving), key rotation and the
// owner's journal (§11.6, §11.7), snapshot inventories beyond handing
// received fragments to the roster chain, deleting a collection (§11.9),
// healing and garbage collection on the hub (§10.7, §12.2), pairing
// (§6.3; a second device is made from the same secret, as restoring from
// the backup key does), and persistence of a device's state across
// processes (the caller's concern). Kind-3 messages are ignored. Messages
// held for a missing roster statement and inventory fragments are bounded
// in bytes and number, per collection and per device (bounds.go,
// docs/decisions/tandem-client-bounds.md).
//
// # How it works
//
//   - Write is local and instant (§13.2): State.Build of tandem/record signs
//     a write with full context and base for the register it changes (§9.2),
//     under the head of the followed roster (§8.3); it is merged at once and
//     queued as a kind-1 envelope (§5.4) of its own in the current epoch
//     channel (§5.6), holding the §10.5 record-state payload.
//   - CreateCollection signs the genesis with tandem/roster (§7.1) with a
//     random epoch key, and queues the genesis in the epoch channel (§9.4,
//     §10.5), the collection's name in _meta (§7.3), and the membership
//     record in home with the key (§6.2).
//   - Sync(ctx) publishes the queue through hub.Publisher (never twice,
//     §10.2), then reads Changes from its cursor, Fetches the messages of
//     followed channels only, opens them, reads payloads with the strict
//     reader (tandem/tjson, §10.5), verifies every signature strictly (§5.5),
//     follows the roster chain (§9.4), judges data writes by roster
//     eligibility (§8.3), and merges (§9.3). Home is read first; an active
//     membership makes the collection followed at once (§6.3 step 5), and
//     the key is checked against the epoch's commitment (§5.7).
//   - Bad input is rejected whole, per message, with a *RejectError in the
//     report, and changes no state. Messages of unknown channels are never
//     downloaded; unknown versions and non-envelopes are ignored silently
//     (§10.4, §15).
//
// # Finding a collection on a second device
//
// A second device learns each collection from the membership record in home
// (§6.2), which carries the collection ID in its name and every epoch key
// the user holds. The alternative, the caller passing the genesis, would
// still need the epoch key from somewhere, so home is both the smaller
// honest design and the one the spec describes. Decisions where the draft
// is silent: docs/decisions/tandem-client-payload.md (the wire form of a
// write), docs/decisions/tandem-client-home.md (membership records) and
// docs/decisions/tandem-client-sync.md (one write per message, rejection
// and holding).
//
// Written by hand: only the glue. Cryptography, JSON, merge, roster and hub
// access are the tandem/suite, tjson, record, roster and hub packages.
package client
