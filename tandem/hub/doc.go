// Package hub is the Tandem hub store (§10): the abstract store every binding
// implements (§10.1), the message format both bindings share (§10.4), and
// the identity of a message across bindings, H(envelope). Publishing once
// (§10.2) and garbage collection (§10.7) are the sync engine's
// (tandem/internal/client/publish.go), not the store's.
//
// The bindings live in sub-packages: memhub (in memory, for tests of
// everything above the store), imaphub (IMAP, §10.3) and jmaphub (JMAP,
// §10.2). hubtest is the conformance suite every binding passes.
//
// The hub moves envelopes (§5.4); it never opens them. This package checks
// only an envelope's magic, version and minimum length, so that a body which
// is not an envelope is ignored (§10.4) and one of an unknown version is
// ignored without error to the user (§15).
package hub
