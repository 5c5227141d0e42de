// bench.cjs — the Node side of the Loro engine's benchmarks
// (bench_test.go BenchmarkNode): the same operations on loro-crdt 1.13.9,
// timed with process.hrtime. Reads {"keys": n} on stdin, writes ns per
// operation and memory as JSON.
"use strict";
const { LoroDoc } = require("loro-crdt");
const glue = require("loro-crdt/nodejs/loro_wasm.js");

function now() { return process.hrtime.bigint(); }
function value(i) { return "value-" + i + "-" + "x".repeat(32); }

let input = "";
process.stdin.on("data", (c) => { input += c; });
process.stdin.on("end", () => {
  const { keys } = JSON.parse(input);
  const d = new LoroDoc();
  d.setPeerId(1n);
  const m = d.getMap("data");
  let t = now();
  for (let i = 0; i < keys; i++) {
    m.set("key-" + i, value(i));
    d.commit();
  }
  const setNs = Number(now() - t) / keys;
  t = now();
  const updates = d.export({ mode: "update" });
  const exportUpdatesNs = Number(now() - t);
  t = now();
  const snapshot = d.export({ mode: "snapshot" });
  const exportSnapshotNs = Number(now() - t);
  const wasmBytes = glue.__wasm.memory.buffer.byteLength; // the one document built
  t = now();
  const d2 = new LoroDoc();
  d2.import(updates);
  const importNs = Number(now() - t);
  t = now();
  const d3 = new LoroDoc();
  d3.import(snapshot);
  const reloadNs = Number(now() - t);
  const mem = process.memoryUsage();
  process.stdout.write(JSON.stringify({
    setNs, exportUpdatesNs, exportSnapshotNs, importNs, reloadNs,
    updateBytes: updates.length, snapshotBytes: snapshot.length,
    rssBytes: mem.rss, wasmBytes,
  }));
});
