// Package interop holds the tests that run Ferry's Evolu implementation
// (evolu/protocol, evolu/relay, evolu/client) against the real Evolu npm
// packages, and the side-by-side benchmarks of the Ferry relay and the real
// TypeScript relay.
//
// The real side is:
//
//   - the relay of @evolu/nodejs 3.0.0-next.3 (startRelay, WebSocket,
//     better-sqlite3) with @evolu/common 8.0.0-next.5, started by
//     js/relay.mjs on 127.0.0.1 and a free port;
//   - a client made of the protocol functions of @evolu/common 8.11.0
//     (createProtocolMessageForSync, applyProtocolMessageAsClient,
//     encodeAndEncryptDbChange, decryptAndDecodeDbChange, the package's own
//     SQLite storage), driven by js/client.mjs over a WebSocket;
//   - the byte vectors in testdata/evolu, made by js/gen-vectors.mjs with the
//     real 8.11.0 encoders.
//
// scripts/setup.d/30-evolu.sh installs Node 24 and these packages into
// $FERRY_CACHE/evolu and writes their paths to $FERRY_CACHE/env.d/evolu.env,
// which the tests read (from the environment, or from that file). When they
// are missing the tests skip, except under FERRY_REQUIRE_REAL=1 (set by
// scripts/test), where they fail.
//
// The package has only tests; this file exists so it is a package.
package interop
