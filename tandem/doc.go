// Package tandem is Ferry's Tandem: encrypted, shared collections of
// records kept in sync through an ordinary mail account (JMAP or IMAP),
// with every device holding a full replica (tandem.txt §1.1, §12.1).
//
// An app opens one Device per installation, in a directory of its own:
//
//	d, err := tandem.Open(ctx, dir, tandem.Options{Name: "Jesper", Hub: tandem.IMAPHub(host, 993, user, pass)})
//	list, err := d.NewCollection("Groceries")
//	milk, err := d.NewRecord(list, map[string][]byte{"title": []byte("Milk")})
//	err = d.AddElement(list, milk, "tags", []byte("dairy"))
//	_, err = d.Sync(ctx)
//
// Everything is local and instant: a write is signed, merged and saved on
// disk before the call returns (§13.2), and the device works without a
// network. Sync publishes what this device wrote and merges what the other
// devices published; it reports an unreachable hub as an *Error with
// CodeOffline and a refused credential as CodeAuth, whose Message is the
// sentence of §13.3 to show the user. Reading gives plain Go values:
// every value of a field (several are a conflict, §9.2), set elements,
// deleted records, and who wrote each value (Author: the user's ID and the
// name the collection's roster gives them, §1.1 goal 5; for someone no
// longer a member, the last name its history gave them, with Removed set).
//
// # Collections
//
// A collection is named by its CollectionID (NewCollection, Collections),
// which every per-collection method of Device takes first. Every one of
// them, queries included, reports a collection the device does not know
// the same way: an *Error with CodeNotFound, "no such list on this
// device". A collection the user asked to join is known before the device
// follows it, so Membership and WhyDeclined answer for it
// (docs/decisions/tandem-collection-api.md).
//
// # The device directory
//
// The directory holds three files: secret (the 32-byte user secret US,
// mode 0600), device.db (one SQLite database: device ID, clock, the hub's
// change-feed cursor, the outbox, the merged states of home and every
// collection, roster chains, the index of hub messages with what was done
// with each — rejected ones are never fetched again — and held messages
// with the time they were first seen) and lock (held with a file lock —
// flock on Unix, LockFileEx on Windows — while the device is open: a
// second process gets CodeLocked, never a second writer).
// The schema carries a version: a newer one is refused (CodeNewerVersion),
// an older one migrated on open. The device ID changes only when a secret
// is newly installed (first run, Restore; §5.3), and the clock never goes
// back across restarts, whatever the wall clock says (§9.1).
//
// # What protects the state
//
// The secret file is protected by the file system only: mode 0600 in a
// directory of mode 0700, readable by the user's own processes and by
// root. The spec's Keychain with this-device-only accessibility (§5.3) is
// the platform's job; an app on such a platform keeps the directory in its
// protected container. Writes read back from device.db are not verified
// again on open: the database is written by this device after it verified
// every write, and whoever could alter it could read the secret beside it
// and sign anything, so verifying again would cost seconds per open and
// protect nothing (docs/decisions/tandem-device-store.md). Accidental
// damage is caught instead: each stored write carries a checksum, and one
// that fails is dropped, never shown or published, read again from the
// hub and counted in DamagedOnOpen. Open refuses, with CodeDamaged and the
// file's name, a device.db that is empty or missing beside the secret and
// a secret missing beside a device.db; Restore with the backup key repairs
// the latter and keeps its unsynced edits
// (docs/decisions/tandem-device-integrity.md).
//
// # Bounds
//
// Anyone with the hub credential can post to the hub, and members can post
// within their role (§3.1). What they post costs the device no more than
// fixed bounds, each per collection and over the device, set in
// Options.Limits (zero fields take these defaults):
//
//	messages held for a missing roster statement   1,024 and 8 MiB per collection; 4,096 and 32 MiB per device
//	inventory fragments held before assembly       8 MiB per collection; 32 MiB per device
//	one download from the hub                       4 MiB (256 messages); one over 1 MiB is never downloaded
//
// A message a bound refuses is remembered, with the time it was first
// seen (the 30-day holding limit of §9.4 counts from then), and is not
// downloaded again until the bound frees; honest messages that need no
// holding keep arriving meanwhile. docs/decisions/tandem-client-bounds.md.
//
// # Hubs
//
// A Hub is the descriptor of §13.1, read with ParseHub from its JSON form
// (a hub QR code's content) or made with IMAPHub, JMAPHub and
// JMAPBasicHub. An app that brings its own binding passes Options.Store:
// any hub.Store (packages hub/imaphub, hub/jmaphub and hub/memhub are the
// ones Ferry ships).
//
// The protocol as Ferry implements it, with a map from spec sections to
// code, is docs/tandem.md.
package tandem
