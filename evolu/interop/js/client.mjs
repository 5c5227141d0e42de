// client.mjs — the TypeScript side of the interop tests: an Evolu client made
// of the real @evolu/common 8.11.0 protocol functions, talking to a relay over
// a WebSocket exactly as Evolu does (ws://host:port?ownerId=..., one binary
// frame per ProtocolMessage).
//
// Usage: node client.mjs '<json>'   (one JSON object, fields below)
//
//   db       SQLite file of this client's storage (the package's own
//            createRelaySqliteStorage over node:sqlite; kept between runs)
//   secret   hex OwnerSecret (32 bytes); the owner is createAppOwner(secret)
//   put      [{table, id, values, millis, counter, nodeId, isInsert, isDelete}]
//            rows to encrypt (encodeAndEncryptDbChange) and store before
//            syncing; a value {"$bytes": hex} is a Uint8Array
//   gen      {indices: [...] | from, to, skipMod, skipRem, pad} items of the
//            shared test universe to encrypt and store (see itemMessage)
//   relay    ws://127.0.0.1:port — sync with this relay (createProtocolMessageForSync,
//            then applyProtocolMessageAsClient until it stops answering)
//   rangesMaxSize  optional ProtocolMessageRangesMaxSize for the client
//   writeKey hex OwnerWriteKey to send instead of the owner's (error tests)
//   subscribe  true: the first request subscribes to the owner's broadcasts;
//            after converging the client writes readyFile (if given) and
//            keeps applying Broadcast messages until it has `broadcasts` of
//            them, then stops
//   dump     true: decrypt every stored change (decryptAndDecodeDbChange)
//            and print them
//
// Prints one JSON object: {count, fingerprint, rounds, bytesSent,
// bytesReceived, framesSent, framesReceived, outcome, error, syncMillis, rows?}.
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { common, lf, hex, unhex, openStorage } from "./lib/evolu.mjs";

const cfg = JSON.parse(process.argv[2] ?? "{}");
const owner = lf.createAppOwner(unhex(cfg.secret));
const ownerIdBytes = lf.ownerIdToOwnerIdBytes(owner.id);
const deps = { ...common.testCreateDeps(), randomBytes: common.createRandomBytes() };

/**
 * Item i of the shared test universe (the Go tests build the same one):
 * timestamp millis 1700000000000+i, counter 0, nodeId 0123456789abcdef;
 * DbChange table "item", id = base64url(SHA-256("item-<i>")[:16]),
 * values {title: "item <i>" + pad spaces, n: i}, isInsert true, isDelete null.
 */
const itemMessage = (i, pad = 0) => ({
  timestamp: lf.createTimestamp({ millis: 1700000000000 + i, counter: 0, nodeId: "0123456789abcdef" }),
  change: lf.DbChange.orThrow({
    table: "item",
    id: common.uint8ArrayToBase64Url(createHash("sha256").update(`item-${i}`).digest().subarray(0, 16)),
    values: { title: `item ${i}` + " ".repeat(pad), n: i },
    isInsert: true,
    isDelete: null,
  }),
});

const indicesOf = (gen) => {
  if (gen.indices) return gen.indices;
  const out = [];
  for (let i = gen.from ?? 0; i < gen.to; i++) {
    if (gen.skipMod && i % gen.skipMod === (gen.skipRem ?? 0)) continue;
    out.push(i);
  }
  return out;
};

/** JSON values of `put`: {"$bytes": hex} is a Uint8Array; the rest as is. */
const fromJsonValues = (values) =>
  Object.fromEntries(
    Object.entries(values).map(([k, v]) => [k, v && typeof v === "object" && "$bytes" in v ? unhex(v.$bytes) : v]),
  );

const encrypt = (m) => ({
  timestamp: m.timestamp,
  change: lf.encodeAndEncryptDbChange(deps)(m, owner.encryptionKey),
});

const store = async (s, messages) => {
  for (let i = 0; i < messages.length; i += 1000) {
    const res = await s.run(s.storage.writeMessages(ownerIdBytes, messages.slice(i, i + 1000)));
    if (!res.ok) throw new Error("writeMessages: " + JSON.stringify(res.error));
  }
};

const writeKey = cfg.writeKey ? unhex(cfg.writeKey) : owner.writeKey;

const sync = (s, url) =>
  new Promise((resolve, reject) => {
    const stats = { rounds: 0, bytesSent: 0, bytesReceived: 0, framesSent: 0, framesReceived: 0, outcome: null, error: null, broadcasts: 0 };
    let converged = false;
    const ws = new WebSocket(`${url}?ownerId=${owner.id}`);
    ws.binaryType = "arraybuffer";
    const timer = setTimeout(() => {
      ws.close();
      reject(new Error("sync timed out"));
    }, Number(cfg.timeoutMs ?? 300000));
    const send = (bytes) => {
      stats.bytesSent += bytes.length;
      stats.framesSent++;
      stats.rounds++;
      ws.send(bytes);
    };
    const done = () => {
      clearTimeout(timer);
      ws.close();
      resolve(stats);
    };
    ws.onerror = (e) => {
      clearTimeout(timer);
      reject(new Error("websocket: " + (e.message ?? e.type)));
    };
    const flag = cfg.subscribe ? lf.SubscriptionFlags.Subscribe : lf.SubscriptionFlags.None;
    ws.onopen = () => send(lf.createProtocolMessageForSync({ storage: s.storage })(owner.id, flag));
    // Frames are handled one at a time, in order.
    let queue = Promise.resolve();
    ws.onmessage = (ev) => {
      const data = new Uint8Array(ev.data);
      queue = queue.then(async () => {
        stats.bytesReceived += data.length;
        stats.framesReceived++;
        const res = await s.run(
          lf.applyProtocolMessageAsClient(data, {
            writeKey,
            rangesMaxSize: cfg.rangesMaxSize,
          }),
        );
        if (!res.ok) {
          stats.outcome = "Error";
          stats.error = res.error.type;
          return done();
        }
        stats.outcome = res.value.type;
        if (res.value.type === "Response") return send(res.value.message);
        if (res.value.type === "Broadcast") stats.broadcasts++;
        else converged = true;
        if (!cfg.subscribe) return done();
        if (converged && cfg.readyFile && !existsSync(cfg.readyFile)) writeFileSync(cfg.readyFile, "ready");
        if (converged && stats.broadcasts >= (cfg.broadcasts ?? 0)) done();
      }).catch((e) => {
        clearTimeout(timer);
        reject(e);
      });
    };
  });

const main = async () => {
  const s = await openStorage({ file: cfg.db, seed: "client" });
  const toStore = [];
  for (const p of cfg.put ?? []) {
    toStore.push(
      encrypt({
        timestamp: lf.createTimestamp({ millis: p.millis, counter: p.counter ?? 0, nodeId: p.nodeId ?? "0123456789abcdef" }),
        change: lf.DbChange.orThrow({ table: p.table, id: p.id, values: fromJsonValues(p.values), isInsert: p.isInsert ?? true, isDelete: p.isDelete ?? null }),
      }),
    );
  }
  if (cfg.gen) for (const i of indicesOf(cfg.gen)) toStore.push(encrypt(itemMessage(i, cfg.gen.pad ?? 0)));
  if (toStore.length) await store(s, toStore);

  const result = {};
  if (cfg.relay) {
    const t0 = performance.now();
    Object.assign(result, await sync(s, cfg.relay));
    result.syncMillis = performance.now() - t0;
  }
  const size = s.storage.getSize(ownerIdBytes);
  result.count = size;
  result.fingerprint = hex(s.storage.fingerprint(ownerIdBytes, 0, size));
  if (cfg.dump) {
    const rows = [];
    s.storage.iterate(ownerIdBytes, 0, size, (t) => {
      const timestamp = lf.timestampBytesToTimestamp(t);
      const change = s.storage.readDbChange(ownerIdBytes, t);
      const res = lf.decryptAndDecodeDbChange({ timestamp, change }, owner.encryptionKey);
      rows.push(
        res.ok
          ? {
              timestamp: hex(t),
              table: res.value.table,
              id: res.value.id,
              values: res.value.values,
              isInsert: res.value.isInsert,
              isDelete: res.value.isDelete,
            }
          : { timestamp: hex(t), error: res.error.type },
      );
      return true;
    });
    result.rows = rows;
  }
  process.stdout.write(
    JSON.stringify(result, (_k, v) => (v instanceof Uint8Array ? { $bytes: hex(v) } : v)) + "\n",
  );
  s.sqlite[Symbol.dispose]?.();
};

// Exit only after stdout is flushed: writes to a pipe are asynchronous.
main().then(
  () => process.stdout.write("", () => process.exit(0)),
  (e) => {
    process.stderr.write(String(e?.stack ?? e) + "\n");
    process.exit(1);
  },
);
