// Package client is the Tandem sync engine (tandem.txt) behind the public
// package tandem: the merged state of one device, what it publishes to the
// hub and what it reads back. Package tandem is the face an app uses; this
// package holds the protocol, and nothing outside tandem imports it.
//
// # What it does
//
//   - Devices and home: one user (one secret, §5.3), any number of devices,
//     each with its own device ID and HLC (§9.1); home (§6.2) carries the
//     membership records that tell a device which collections to follow.
//   - Collections: creation (§7.1), records written offline and merged
//     (§9.2, §9.3), the roster chain (§8, §9.4), deletion (§11.9).
//   - Sharing (§11): invites, join requests, grants, declines, key requests,
//     leaving (share.go, share_api.go, keyreq.go, ended.go).
//   - Key rotation and the owner's journal (§11.6, §11.7: rotate.go,
//     resign.go, journal.go).
//   - Publishing (publish.go): by record state, never an envelope the hub
//     already holds (§10.2), healing of lost replicas (§12.2) and garbage
//     collection of superseded messages (§10.7). This is the one
//     implementation; the hub package only stores messages.
//   - Persistence (persist.go): a device's state survives its process
//     through the device store (tandem/internal/devstore).
//   - What package tandem reads and writes through (recordview.go,
//     rosterview.go, identity.go): records, values and authors, a
//     collection's roster and the user's identity in plain types, and the
//     write methods, so that the public package reaches this engine only,
//     never tandem/internal/record, roster or suite.
//
// # How a sync works
//
// Sync publishes the queue, reads Changes from the device's cursor, fetches
// the messages of followed channels only, opens them, reads payloads with
// the strict reader (tandem/internal/tjson, §10.5), verifies every
// signature (§5.5), follows the roster chain (§9.4), judges data writes by
// roster eligibility (§8.3) and merges (§9.3). Bad input is rejected whole,
// per message, with a *RejectError in the report, and changes no state;
// unknown versions and non-envelopes are ignored (§10.4, §15). Messages
// held for a missing roster statement and inventory fragments are bounded
// in bytes and number, per collection and per device (bounds.go,
// docs/decisions/tandem-client-bounds.md).
//
// Decisions where the spec is silent: docs/decisions/tandem-client-*.md,
// tandem-publishing.md, tandem-rotation.md, tandem-invite-answers.md.
//
// Written by hand: only the glue. Cryptography, JSON, merge, roster and hub
// access are the suite, tjson, record, roster and hub packages.
package client
