// Package exchange is the data-sync-v1 exchange engine (§Exchange,
// §Termination, §Bounds, §Group scope): for one space and one peer, it turns
// each inbound frame into the finite set of answers the termination table
// allows, and builds the offers and local commits that start exchanges.
//
// A [Session] is a pure state machine: [Session.Receive] takes wire bytes
// and returns the frames to send, so every rule is testable without a
// transport. [Run] drives a session over a transport.Conn.
//
// The space is never read from a frame: a Session is created for the space
// its transport authenticated (a 1:1 peer key, or a group), and that is the
// only engine it touches (§The space is derived).
package exchange
