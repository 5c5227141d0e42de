// Package interop holds the tests that run Ferry's Evolu implementation
// (evolu/internal/protocol, evolu/relay, evolu/client) against the real Evolu npm
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
//   - the relay code of @evolu/common 8.11.0 served like startRelay
//     (js/relay-811.mjs), the reference for bytes on the wire in the
//     benchmarks (docs/decisions/evolu-interop-relay-811.md);
//   - the byte vectors in testdata/evolu, made by js/gen-vectors.mjs with the
//     real 8.11.0 encoders.
//
// What the tests check (issue 5, point 5):
//
//   - (a) TestTSClientPushPullThroughFerryRelay, (b)
//     TestFerryClientPushPullThroughTSRelay, TestProtocolSyncThroughTSRelay;
//   - (c) TestManyRoundsTSClientFerryRelay, TestManyRoundsFerryClientTSRelay:
//     3,000 changes of about 500 bytes over several rounds, each side holding
//     a different two-thirds; TestReconcileScatteredDifferences: 10,000 on
//     each side with scattered differences, both ways;
//   - (d) TestEncryptedChangesCrossRead (every value kind, a deletion, both
//     relays), and the checks of decrypted rows in the tests above;
//   - (e) Ferry's encoder reproduces the TS encoder's bytes: the vectors in
//     testdata/evolu are made by the real package, and TestVectorsRegenerate
//     here proves they are what it makes today. They are asserted, without
//     Node, by the packages that own the code (all loaded through
//     evolu/internal/vectors): evolu/internal/protocol's TestVectors* (varint and
//     header version, timestamps, message buffers and their limits,
//     Decode/Encode round trips, relay replies and client outcomes) and
//     TestVectorsRBSRMemory (transcripts on the memory store);
//     evolu/internal/sqlstore's TestVectorsRBSR (the same transcripts on the
//     SQLite store); evolu/client's TestVectors* (values, owner keys and
//     SLIP-21, encrypted changes, the push continuation by
//     the client's newPushRequest and by protocol.NewPushRequest);
//   - broadcasts and protocol errors (write key, quota) across the
//     implementations, and the Ferry client's live loop (client.Run) with
//     the real TS relay and a subscribed TS client.
//
// The benchmarks (BenchmarkRelay*, only with -bench) run the same client
// workload against the real TS relay, the Ferry relay (the built `ferry
// relay`) and the 8.11.0 relay code, each as its own process, and report
// wall-clock, relay CPU, bytes, rounds and peak RSS (docs/benchmarks/evolu.md).
//
// scripts/setup.d/30-evolu.sh installs Node 24 and these packages into
// $FERRY_CACHE/evolu and writes their paths to $FERRY_CACHE/env.d/evolu.env,
// which the tests read (from the environment, or from that file). When they
// are missing the tests skip, except under FERRY_REQUIRE_REAL=1 (set by
// scripts/test), where they fail.
//
// The package has only tests; this file exists so it is a package.
package interop
