// Package hub is the Tandem hub store (§10): the abstract store every binding
// implements (§10.1), the message format both bindings share (§10.4), the
// identity of a message across bindings, H(envelope), with a [Publisher] that
// never appends an envelope the hub already holds (§10.2), and the garbage
// collection rule of §10.7 ([Dominated]).
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
