// Package suite implements Tandem suite v1 (tandem.txt §5): the hash and key
// derivation, the keys derived from a user secret, channel tags, envelopes,
// the signed byte strings of writes and other objects, strict Ed25519
// verification, named record IDs, key commitments, snapshot inventory bytes,
// the backup key and the pairing code.
//
// Notation follows tandem-gaps.md ("Notation (§5.2)"):
//
//	H(x)                 SHA-256, 32 bytes
//	KDF(ikm,salt,info,L) HKDF-SHA-256 (RFC 5869), empty salt = zero salt
//	u8,u16,u32,u64       unsigned big-endian integers
//	lp(x)                u32(len(x)) || x
//	b32(x)               RFC 4648 base32, lowercase a-z2-7, no padding
//
// Every byte string two implementations must agree on is built here and
// pinned by the published vectors in testdata/vectors/tandem-v1.json
// (docs/vectors.md).
//
// Where the spec is silent, the choices are recorded in
// docs/decisions/tandem-suite-*.md: inventory encoding (inventory),
// SigInput's refusals (write-limits), envelope errors (envelope), strict
// Ed25519 details (verify), the pairing reply (pair-reply), the other
// signed byte strings (signed-strings), the pairing tag (pairing-tag) and
// the keys and AAD of HPKE (hpke-keys).
//
// Written by hand: only the Tandem-specific byte layouts, and the strict
// Ed25519 acceptance rules of §5.5 on top of filippo.io/edwards25519 (and,
// for the remembered keys of Keys, github.com/oasisprotocol/curve25519-voi's
// expanded-key verification: docs/decisions/tandem-suite-verify.md). All
// primitives come from the standard library (crypto/sha256, crypto/hkdf,
// crypto/ed25519, crypto/ecdh, crypto/hpke) and golang.org/x/crypto
// (chacha20poly1305).
package suite
