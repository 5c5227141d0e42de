// crosscheck.cjs — the Node side of the Loro engine's golden cross-checks
// (datasync/engine/loro/golden_test.go). Run with the real loro-crdt 1.13.9
// on NODE_PATH; reads one JSON request on stdin, writes one JSON answer.
//
//   {"mode": "corpus", "scenarios": [...]}   run each scenario's steps the
//        way the Go engine does and record every byte the engine would
//        produce (versions after each step, updates sent, final snapshots,
//        all-updates exports and JSON)
//   {"mode": "interop", "peer": n, "steps": [...], "import": [hex...],
//    "snapshot": hex}
//        make a document as peer n, apply the steps, export its updates,
//        then import the given blobs (Go's updates); also load the given
//        snapshot into a fresh document; answer their JSON and versions
//   {"mode": "read", "snapshots": {doc: base64}}
//        load each snapshot into a fresh document and answer, per
//        document, its JSON and its own re-export as a snapshot (hex)
//   {"mode": "rootnames", "names": [...]}
//        answer, per name, whether loro-crdt takes it as a root map name
//
// Steps can also write what Ferry never writes but a Loro peer may: a
// float "NaN", "Infinity" or "-Infinity", and nested containers (ops
// counter, textc, listc, container, refmap: a map container with an
// attachment reference's fields).
"use strict";
const { LoroDoc, LoroMap, LoroCounter, LoroText, LoroList, VersionVector } = require("loro-crdt");

const hex = (u8) => Buffer.from(u8).toString("hex");
const unhex = (s) => new Uint8Array(Buffer.from(s, "hex"));

function jsValue(v) {
  switch (v.kind) {
    case "null": return null;
    case "bool": return v.value;
    case "int": case "float": return Number(v.value);
    case "text": return v.value;
    case "bytes": return unhex(v.value);
    case "attachment": {
      const o = { kind: "attachment", hash: v.hash, size: Number(v.size) };
      if (v.name) o.name = v.name;
      if (v.mime) o.mime = v.mime;
      return o;
    }
  }
  throw new Error("unknown value kind " + v.kind);
}

function canon(x) {
  if (x instanceof Uint8Array) return { $bytes: hex(x) };
  // docs/decisions/datasync-loro-values.md: JSON has no NaN or Infinity.
  if (typeof x === "number" && !Number.isFinite(x)) return { $float: String(x) };
  if (Array.isArray(x)) return x.map(canon);
  if (x !== null && typeof x === "object") {
    const out = {};
    for (const k of Object.keys(x).sort()) out[k] = canon(x[k]);
    return out;
  }
  return x;
}

function newDoc(peer) {
  const d = new LoroDoc();
  d.setPeerId(BigInt(peer));
  return d;
}

const vvOf = (d) => hex(d.oplogVersion().encode());
const isEmptyVV = (d) => d.oplogVersion().length() === 0;

// changes mirrors Engine.Changes: null when the sender's shallow root lies
// above the receiver's version (the engine answers ErrTrimmed).
function changes(src, dst) {
  const since = src.shallowSinceVV();
  const to = dst.oplogVersion();
  if (since.length() > 0) {
    const c = since.compare(to);
    if (c === undefined || c > 0) return null;
  }
  if (to.length() === 0) return src.export({ mode: "update" });
  return src.export({ mode: "update", from: to });
}

function edit(d, step) {
  const m = d.getMap(step.coll || "data");
  switch (step.op) {
    case "set": m.set(step.key, jsValue(step.value)); break;
    case "del": m.delete(step.key); break;
    case "batch": for (const [k, v] of step.entries) m.set(k, jsValue(v)); break;
    case "container": m.setContainer(step.key, new LoroMap()).set("inner", 1); break;
    case "counter": m.setContainer(step.key, new LoroCounter()).increment(3); break;
    case "textc": m.setContainer(step.key, new LoroText()).insert(0, "text"); break;
    case "listc": m.setContainer(step.key, new LoroList()).push(1); break;
    case "refmap": {
      const r = m.setContainer(step.key, new LoroMap());
      for (const [k, v] of Object.entries(jsValue(step.value))) r.set(k, v);
      break;
    }
  }
  d.commit();
}

function runScenario(sc) {
  const docs = new Map();
  const get = (p) => {
    if (!docs.has(p)) docs.set(p, newDoc(p));
    return docs.get(p);
  };
  for (const p of sc.peers) get(p);
  const steps = [];
  for (const step of sc.steps) {
    const rec = {};
    switch (step.op) {
      case "set": case "del": case "batch":
        edit(get(step.peer), step);
        break;
      case "sync": {
        const u = changes(get(step.from), get(step.to));
        if (u === null) { rec.trimmed = true; break; }
        rec.update = hex(u);
        get(step.to).import(u);
        break;
      }
      case "snap": {
        const s = get(step.from).export({ mode: "snapshot" });
        rec.snapshot = hex(s);
        get(step.to).import(s);
        break;
      }
      case "compact": {
        const d = get(step.peer);
        const s = d.export({ mode: "shallow-snapshot", frontiers: d.oplogFrontiers() });
        const n = newDoc(step.peer);
        n.import(s);
        docs.set(step.peer, n);
        rec.snapshot = hex(s);
        break;
      }
      default: throw new Error("unknown op " + step.op);
    }
    rec.versions = sc.peers.map((p) => vvOf(get(p)));
    steps.push(rec);
  }
  const final = sc.peers.map((p) => {
    const d = get(p);
    return {
      snapshot: hex(d.export({ mode: "snapshot" })),
      updates: hex(d.export({ mode: "update" })),
      json: JSON.stringify(canon(d.toJSON())),
    };
  });
  return { steps, final };
}

function interop(req) {
  const d = newDoc(req.peer);
  for (const step of req.steps) edit(d, step);
  const own = d.export({ mode: "update" });
  for (const b of req.import) d.import(unhex(b));
  const fresh = new LoroDoc();
  if (req.snapshot) fresh.import(unhex(req.snapshot));
  return {
    update: hex(own),
    json: JSON.stringify(canon(d.toJSON())),
    version: vvOf(d),
    snapshot: hex(d.export({ mode: "snapshot" })),
    freshJson: JSON.stringify(canon(fresh.toJSON())),
  };
}

function rootnames(req) {
  const d = new LoroDoc();
  return req.names.map((n) => {
    try { d.getMap(n); return true; } catch (e) { return false; }
  });
}

function read(req) {
  const out = {};
  for (const [name, b64] of Object.entries(req.snapshots)) {
    const d = new LoroDoc();
    d.import(new Uint8Array(Buffer.from(b64, "base64")));
    out[name] = {
      json: JSON.stringify(canon(d.toJSON())),
      snapshot: hex(d.export({ mode: "snapshot" })),
      version: vvOf(d),
    };
  }
  return out;
}

let input = "";
process.stdin.on("data", (c) => { input += c; });
process.stdin.on("end", () => {
  const req = JSON.parse(input);
  let out;
  if (req.mode === "corpus") out = req.scenarios.map(runScenario);
  else if (req.mode === "interop") out = interop(req);
  else if (req.mode === "read") out = read(req);
  else if (req.mode === "rootnames") out = rootnames(req);
  else throw new Error("unknown mode " + req.mode);
  process.stdout.write(JSON.stringify(out));
});
void isEmptyVV;
void VersionVector;
