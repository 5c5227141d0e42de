// gen-vectors.mjs — writes testdata/evolu/*.json with the REAL @evolu/common
// 8.11.0 encoders (installed by scripts/setup.d/30-evolu.sh).
//
// Usage: FERRY_EVOLU_CLIENT_DIR=... node gen-vectors.mjs <out dir>
//
// Randomness comes from the package's own seeded test deps (testCreateDeps,
// seed "evolu"), as Protocol.test.ts does; every random byte the encoders draw
// (nonces, random fingerprints) is recorded in the vectors, so another
// implementation can reproduce the bytes. Output is deterministic: running it
// twice gives identical files. See docs/evolu-vectors.md for the format.
import { mkdirSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { common, lf, hex, unhex, openStorage } from "./lib/evolu.mjs";

const out = process.argv[2];
if (!out) {
  console.error("usage: gen-vectors.mjs <out dir>");
  process.exit(2);
}
mkdirSync(out, { recursive: true });

const meta = (what) => ({
  generator: "evolu/interop/js/gen-vectors.mjs",
  package: "@evolu/common@8.11.0",
  node: process.version,
  what,
});

const write = (name, value) => {
  writeFileSync(join(out, name), JSON.stringify(value, null, 1) + "\n");
  console.error(`wrote ${name}`);
};

/** Seeded random bytes that remember what they handed out. */
const recordingDeps = (seed = "evolu") => {
  const deps = common.testCreateDeps({ seed });
  const drawn = [];
  const randomBytes = {
    create: (n) => {
      const b = deps.randomBytes.create(n);
      drawn.push(hex(b));
      return b;
    },
  };
  return { deps: { ...deps, randomBytes }, drawn };
};

const encodeWith = (fn) => {
  const buffer = common.createBuffer();
  fn(buffer);
  return hex(buffer.unwrap());
};

const ts = (millis, counter = 0, nodeId = "0000000000000000") =>
  lf.createTimestamp({ millis, counter, nodeId });
const tsJson = (t) => ({ millis: t.millis, counter: t.counter, nodeId: t.nodeId });
const tsFromJson = (j) => lf.createTimestamp(j);

// ---------------------------------------------------------------- varint
{
  const values = [
    0, 1, 2, 19, 20, 127, 128, 129, 255, 256, 300, 16383, 16384, 65535,
    2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 32, 2 ** 35 - 1, 2 ** 35,
    2 ** 42, 2 ** 48 - 1, 2 ** 49, 2 ** 52, Number.MAX_SAFE_INTEGER,
  ];
  const encode = values.map((value) => ({
    value,
    hex: encodeWith((b) => common.encodeNonNegativeInt(b, value)),
  }));
  for (const e of encode) {
    const back = common.decodeNonNegativeInt(common.createBuffer(unhex(e.hex)));
    if (back !== e.value) throw new Error(`varint round trip ${e.value}`);
  }
  const decodeCases = [
    "", "80", "ff", "8080", "ffffffffffffff", "ffffffffffffffff",
    "ffffffffffffffff01", "ffffffffffffff7f", "ffffffffffffff0f",
    "8000", "808000", "0001",
  ].map((h) => {
    const buffer = common.createBuffer(unhex(h));
    try {
      const value = common.decodeNonNegativeInt(buffer);
      return { hex: h, value, rest: hex(buffer.unwrap()) };
    } catch (e) {
      return { hex: h, error: String(e.message ?? e) };
    }
  });
  write("varint.json", {
    ...meta("NonNegativeInt varint (Bytes.ts encodeNonNegativeInt/decodeNonNegativeInt)"),
    encode,
    decode: decodeCases,
  });
}

// ---------------------------------------------------------------- timestamps
{
  const samples = [
    ts(0),
    ts(1),
    ts(1, 1),
    ts(1700000000000, 0, "0123456789abcdef"),
    ts(1700000000000, 65535, "ffffffffffffffff"),
    ts(common.maxMillis, lf.maxCounter, lf.maxNodeId),
    ts(281474976710654, 7, "a1b2c3d4e5f60718"),
  ];
  const timestamps = samples.map((t) => {
    const bytes = lf.timestampToTimestampBytes(t);
    return {
      timestamp: tsJson(t),
      bytes: hex(bytes),
      fingerprint: hex(lf.timestampBytesToFingerprint(bytes)),
    };
  });
  const seqs = [
    { name: "empty", list: [], infinite: 0 },
    { name: "one zero", list: [ts(0)], infinite: 0 },
    { name: "only infinite", list: [], infinite: 1 },
    {
      name: "run-length counters and nodeIds",
      list: [
        ts(1000, 0, "aaaaaaaaaaaaaaaa"),
        ts(1000, 1, "aaaaaaaaaaaaaaaa"),
        ts(1001, 1, "aaaaaaaaaaaaaaaa"),
        ts(1001, 1, "bbbbbbbbbbbbbbbb"),
        ts(5000, 1, "bbbbbbbbbbbbbbbb"),
        ts(5000, 2, "aaaaaaaaaaaaaaaa"),
      ],
      infinite: 0,
    },
    {
      name: "same counter and nodeId x 300",
      list: Array.from({ length: 300 }, (_, i) => ts(1700000000000 + i * 17, 3, "0123456789abcdef")),
      infinite: 0,
    },
    {
      name: "large deltas then infinite",
      list: [ts(1), ts(2 ** 40), ts(common.maxMillis, lf.maxCounter, lf.maxNodeId)],
      infinite: 1,
    },
    {
      name: "alternating nodeIds and counters",
      list: Array.from({ length: 40 }, (_, i) =>
        ts(1700000000000 + i, i % 3, i % 2 ? "1111111111111111" : "2222222222222222"),
      ),
      infinite: 0,
    },
  ];
  const buffers = seqs.map(({ name, list, infinite }) => {
    const tb = lf.createTimestampsBuffer();
    for (const t of list) tb.add(t);
    for (let i = 0; i < infinite; i++) tb.addInfinite();
    const b = common.createBuffer();
    tb.append(b);
    const bytes = b.unwrap();
    if (bytes.length !== tb.getLength()) throw new Error("getLength");
    return { name, timestamps: list.map(tsJson), infinite, hex: hex(bytes) };
  });
  write("timestamps.json", {
    ...meta("Timestamp <-> TimestampBytes, fingerprint = SHA-256(TimestampBytes)[:12], TimestampsBuffer (count, delta millis, RLE counters, RLE NodeIds; addInfinite only counts)"),
    timestamps,
    buffers,
  });
}

// ---------------------------------------------------------------- owners
{
  const rd = common.testCreateDeps({ seed: "owners" });
  const secrets = [
    lf.testOwnerSecret,
    new Uint8Array(32),
    new Uint8Array(32).fill(0xff),
    Uint8Array.from({ length: 32 }, (_, i) => i),
    rd.randomBytes.create(32),
    rd.randomBytes.create(32),
  ];
  const owners = secrets.map((secret) => {
    const o = lf.createAppOwner(secret);
    const shard = lf.deriveShardOwner(o, ["shard", 1]);
    return {
      secret: hex(secret),
      mnemonic: o.mnemonic,
      id: o.id,
      idBytes: hex(lf.ownerIdToOwnerIdBytes(o.id)),
      encryptionKey: hex(o.encryptionKey),
      writeKey: hex(o.writeKey),
      shard: {
        path: ["shard", 1],
        id: shard.id,
        idBytes: hex(lf.ownerIdToOwnerIdBytes(shard.id)),
        encryptionKey: hex(shard.encryptionKey),
        writeKey: hex(shard.writeKey),
      },
    };
  });
  const slip21 = [
    [new Uint8Array(32), ["Evolu", "OwnerIdBytes"]],
    [Uint8Array.from({ length: 32 }, (_, i) => i), ["Evolu", "OwnerEncryptionKey"]],
    [Uint8Array.from({ length: 32 }, (_, i) => i), ["a", 1, "b"]],
  ].map(([seed, path]) => ({ seed: hex(seed), path, key: hex(common.createSlip21(seed, path)) }));
  write("owners.json", {
    ...meta("Owner from OwnerSecret (Owner.ts createAppOwner: SLIP-21 paths Evolu/OwnerIdBytes [:16], Evolu/OwnerEncryptionKey, Evolu/OwnerWriteKey [:16]; OwnerId = base64url(idBytes)); deriveShardOwner(owner, path) = owner from SLIP-21(encryptionKey, path); raw createSlip21"),
    owners,
    slip21,
  });
}

// ---------------------------------------------------------------- values
const valueJson = (v) => {
  if (v === null) return { kind: "null" };
  if (v instanceof Uint8Array) return { kind: "bytes", hex: hex(v) };
  if (typeof v === "number") {
    if (Object.is(v, -0)) return { kind: "number", v: 0, negativeZero: true };
    return { kind: "number", v };
  }
  return { kind: "string", v };
};
const valueFromJson = (j) => {
  switch (j.kind) {
    case "null":
      return null;
    case "bytes":
      return unhex(j.hex);
    case "number":
      return j.negativeZero ? -0 : j.v;
    default:
      return j.v;
  }
};
const sampleValues = [
  "", "a", "hello", "Příliš žluťoučký kůň 🐎", "x".repeat(300),
  "2024-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z",
  "0000-01-01T00:00:00.000Z", "2024-02-30T00:00:00.000Z", "2024-01-01T00:00:00Z",
  "AAAAAAAAAAAAAAAAAAAAAA", "BSf-8mxNjgk72yD-D7rr1A", "BSf-8mxNjgk72yD-D7rr1",
  '{"a":1}', '{"a":[1,2.5,"x",null,true,{"b":false}]}', "[1,2]", "[]", "{}",
  '"x"', "true", "false", "null", "123", "-1", "1.5", "1e3", "-0", '{"a": 1}',
  "abc", "abc_-", "YWJj", "A", "ab=",
  0, 1, 19, 20, 21, 127, 128, 123, 65536, 2 ** 31, Number.MAX_SAFE_INTEGER,
  -1, -123, -128, -129, -32768, -(2 ** 31), -(2 ** 40), 0.5, 123.5, -123.5,
  1e300, -1e-300, Number.MAX_SAFE_INTEGER + 1, 2 ** 64, -0, Number.MIN_VALUE,
  null, new Uint8Array(0), new Uint8Array([1, 2, 3]), new Uint8Array(200).fill(7),
];
{
  const values = sampleValues.map((v) => {
    const encoded = encodeWith((b) => lf.encodeSqliteValue(b, v));
    const back = lf.decodeSqliteValue(common.createBuffer(unhex(encoded)));
    return { value: valueJson(v), hex: encoded, tag: unhex(encoded)[0], decoded: valueJson(back) };
  });
  write("values.json", {
    ...meta("SqliteValue encoding inside a DbChange (Protocol.ts encodeSqliteValue/decodeSqliteValue, ProtocolValueType tags; strings are classified as DateIso, Id, Json, Base64Url, String in that order). `decoded` is what decodeSqliteValue returns."),
    valueTypes: lf.ProtocolValueType,
    values,
  });
}

// ---------------------------------------------------------------- db changes
{
  const owner = lf.testAppOwner;
  const otherOwner = lf.createAppOwner(new Uint8Array(32).fill(1));
  const cases = [
    {
      name: "insert one string",
      timestamp: ts(1700000000000, 0, "0123456789abcdef"),
      change: { table: "todo", id: "AAAAAAAAAAAAAAAAAAAAAA", values: [["title", "Buy milk"]], isInsert: true, isDelete: null },
    },
    {
      name: "update every value kind",
      timestamp: ts(1700000000001, 2, "0123456789abcdef"),
      change: {
        table: "everything",
        id: "BSf-8mxNjgk72yD-D7rr1A",
        values: sampleValues.slice(0, 40).map((v, i) => [`c${i}`, v]).concat(
          sampleValues.slice(40).map((v, i) => [`n${i}`, v]),
        ),
        isInsert: false,
        isDelete: null,
      },
    },
    {
      name: "delete",
      timestamp: ts(1, 65535, "ffffffffffffffff"),
      change: { table: "t", id: "abcdefghijklmnopqrstuQ", values: [], isInsert: false, isDelete: true },
    },
    {
      name: "undelete",
      timestamp: ts(2, 0, "0000000000000001"),
      change: { table: "t", id: "abcdefghijklmnopqrstuQ", values: [["n", 5]], isInsert: false, isDelete: false },
    },
    {
      name: "long string padding",
      timestamp: ts(1700000000002, 0, "0123456789abcdef"),
      change: { table: "note", id: "AAAAAAAAAAAAAAAAAAAAAA", values: [["body", "lorem ipsum ".repeat(100)]], isInsert: true, isDelete: null },
    },
    ...[0, 1, 2, 3, 10, 30, 60, 100, 250].map((n) => ({
      name: `padding ${n}`,
      timestamp: ts(1700000000100 + n, 0, "0123456789abcdef"),
      change: { table: "p", id: "AAAAAAAAAAAAAAAAAAAAAA", values: [["v", "y".repeat(n)]], isInsert: true, isDelete: null },
    })),
  ];
  const { deps, drawn } = recordingDeps("dbchange");
  const changes = cases.map((c) => {
    const values = Object.fromEntries(c.change.values);
    const dbChange = lf.DbChange.orThrow({ ...c.change, values });
    const message = { timestamp: c.timestamp, change: dbChange };
    const before = drawn.length;
    const encrypted = lf.encodeAndEncryptDbChange(deps)(message, owner.encryptionKey);
    const nonce = drawn[before];
    // The plaintext, from the package's own decryption of the ciphertext.
    const b = common.createBuffer(encrypted);
    b.shiftN(24);
    const ct = b.shiftN(common.decodeLength(b));
    const plain = common.decryptWithXChaCha20Poly1305(ct, unhex(nonce), owner.encryptionKey);
    if (!plain.ok) throw new Error("decrypt");
    const back = lf.decryptAndDecodeDbChange({ timestamp: c.timestamp, change: encrypted }, owner.encryptionKey);
    if (!back.ok) throw new Error("decode " + JSON.stringify(back.error));
    return {
      name: c.name,
      timestamp: tsJson(c.timestamp),
      change: {
        table: c.change.table,
        id: c.change.id,
        values: c.change.values.map(([k, v]) => [k, valueJson(v)]),
        isInsert: c.change.isInsert,
        isDelete: c.change.isDelete,
      },
      decodedValues: Object.entries(back.value.values).map(([k, v]) => [k, valueJson(v)]),
      key: hex(owner.encryptionKey),
      nonce,
      plaintext: hex(plain.value),
      encrypted: hex(encrypted),
    };
  });
  // What decryptAndDecodeDbChange says about bad input.
  const first = changes[0];
  const enc = unhex(first.encrypted);
  const flip = enc.slice();
  flip[flip.length - 1] ^= 1;
  const errorCase = (name, timestamp, bytes, key) => {
    const r = lf.decryptAndDecodeDbChange({ timestamp, change: bytes }, key);
    return { name, timestamp: tsJson(timestamp), encrypted: hex(bytes), key: hex(key), ok: r.ok, error: r.ok ? null : r.error.type };
  };
  const t0 = tsFromJson(first.timestamp);
  const errors = [
    errorCase("valid", t0, enc, owner.encryptionKey),
    errorCase("wrong key", t0, enc, otherOwner.encryptionKey),
    errorCase("tampered tag", t0, flip, owner.encryptionKey),
    errorCase("timestamp mismatch", ts(1700000000000, 1, "0123456789abcdef"), enc, owner.encryptionKey),
    errorCase("truncated", t0, enc.slice(0, 30), owner.encryptionKey),
    errorCase("empty", t0, new Uint8Array(0), owner.encryptionKey),
  ];
  write("dbchanges.json", {
    ...meta("EncryptedDbChange (Protocol.ts encodeAndEncryptDbChange): nonce(24) | varint len | XChaCha20-Poly1305(key, nonce, plaintext); plaintext = varint protocolVersion | TimestampBytes(16) | flags byte (isInsert, isDelete!=null, isDelete) | string table | IdBytes(16) | varint count | (string column, SqliteValue)* | PADMÉ zero padding. `nonce` is what the seeded randomBytes returned; `decodedValues` is what decryptAndDecodeDbChange returns. `errors`: decryptAndDecodeDbChange outcomes for bad input."),
    ownerSecret: hex(lf.testOwnerSecret),
    changes,
    errors,
  });
}

// ---------------------------------------------------------------- messages
const owner = lf.testAppOwner;
const boundJson = (b) => (b === lf.InfiniteUpperBound ? null : hex(b));
const rangeJson = (r) => {
  const base = { type: r.type, upperBound: boundJson(r.upperBound) };
  if (r.type === lf.RangeType.Fingerprint) return { ...base, fingerprint: hex(r.fingerprint) };
  if (r.type === lf.RangeType.Timestamps) return { ...base, timestamps: r.timestampsJson };
  return base;
};
// A change body for vectors that do not need to decrypt: byte j of change i
// is (i*7 + j*13) & 0xff.
const patternChange = (i, len) => Uint8Array.from({ length: len }, (_, j) => (i * 7 + j * 13) & 0xff);

{
  const cases = [];
  const add = (name, options, messages = [], ranges = []) => {
    const buf = lf.createProtocolMessageBuffer(owner.id, options);
    for (const m of messages) buf.addMessage(m);
    for (const r of ranges) {
      if (r.type === lf.RangeType.Timestamps) {
        const tb = lf.createTimestampsBuffer();
        for (const t of r.list) tb.add(t);
        buf.addRange({ type: r.type, upperBound: r.upperBound, timestamps: tb });
      } else buf.addRange(r);
    }
    const size = buf.getSize();
    const bytes = buf.unwrap();
    const opts = { ...options };
    if (opts.writeKey) opts.writeKey = hex(opts.writeKey);
    cases.push({
      name,
      ownerId: owner.id,
      options: opts,
      messages: messages.map((m) => ({ timestamp: tsJson(m.timestamp), change: hex(m.change) })),
      ranges: ranges.map((r) =>
        rangeJson(r.type === lf.RangeType.Timestamps ? { ...r, timestampsJson: r.list.map(tsJson) } : r),
      ),
      getSize: size,
      hex: hex(bytes),
    });
  };
  const MT = lf.MessageType;
  const SF = lf.SubscriptionFlags;
  // Headers.
  for (const [fname, flag] of Object.entries(SF)) {
    add(`request without write key, subscription ${fname}`, { messageType: MT.Request, subscriptionFlag: flag });
    add(`request with write key, subscription ${fname}`, { messageType: MT.Request, writeKey: owner.writeKey, subscriptionFlag: flag });
  }
  add("request, default subscription", { messageType: MT.Request });
  for (const [ename, code] of Object.entries(lf.ProtocolErrorCode)) {
    add(`response ${ename}`, { messageType: MT.Response, errorCode: code });
  }
  add("broadcast", { messageType: MT.Broadcast });
  add("request version 2", { messageType: MT.Request, version: 2 });
  add("request version 300", { messageType: MT.Request, version: 300 });

  // Messages.
  const m = (i, t, len = 41 + ((i * 11) % 50)) => ({ timestamp: t, change: patternChange(i, len) });
  const msgs = [
    m(0, ts(1700000000000, 0, "0123456789abcdef")),
    m(1, ts(1700000000000, 1, "0123456789abcdef")),
    m(2, ts(1700000000005, 1, "0123456789abcdef")),
    m(3, ts(1700000000005, 0, "fedcba9876543210")),
  ];
  add("request with one message", { messageType: MT.Request, writeKey: owner.writeKey }, msgs.slice(0, 1));
  add("request with four messages", { messageType: MT.Request, writeKey: owner.writeKey, subscriptionFlag: SF.Subscribe }, msgs);
  add("broadcast with four messages", { messageType: MT.Broadcast }, msgs);
  add("response with messages", { messageType: MT.Response, errorCode: 0 }, msgs.slice(1));
  add("request with a 200-byte and a 5000-byte change", { messageType: MT.Request, writeKey: owner.writeKey }, [
    m(7, ts(1, 0, "0000000000000001"), 200),
    m(8, ts(2 ** 40, 0, "0000000000000001"), 5000),
  ]);
  add("messages out of timestamp order", { messageType: MT.Request, writeKey: owner.writeKey }, [
    m(9, ts(100)),
    m(10, ts(100)),
    m(11, ts(200, 5, "abababababababab")),
  ]);

  // Ranges.
  const tb = (t) => lf.timestampToTimestampBytes(t);
  const fp = (i) => Uint8Array.from({ length: 12 }, (_, j) => (i * 31 + j) & 0xff);
  const RT = lf.RangeType;
  const inf = lf.InfiniteUpperBound;
  add("one skip range (infinite)", { messageType: MT.Request }, [], [{ type: RT.Skip, upperBound: inf }]);
  add("one fingerprint range (infinite)", { messageType: MT.Request }, [], [{ type: RT.Fingerprint, upperBound: inf, fingerprint: fp(1) }]);
  add("zero fingerprint range", { messageType: MT.Response, errorCode: 0 }, [], [{ type: RT.Fingerprint, upperBound: inf, fingerprint: lf.zeroFingerprint }]);
  add("one empty timestamps range", { messageType: MT.Request }, [], [{ type: RT.Timestamps, upperBound: inf, list: [] }]);
  add("timestamps range", { messageType: MT.Response, errorCode: 0 }, [], [
    { type: RT.Timestamps, upperBound: inf, list: [ts(10), ts(11, 1), ts(11, 1, "0000000000000002"), ts(500, 0, "ffffffffffffffff")] },
  ]);
  add("skip, fingerprint, timestamps", { messageType: MT.Response, errorCode: 0 }, [], [
    { type: RT.Skip, upperBound: tb(ts(1000)) },
    { type: RT.Fingerprint, upperBound: tb(ts(2000, 3, "0123456789abcdef")), fingerprint: fp(2) },
    { type: RT.Timestamps, upperBound: inf, list: [ts(2001), ts(2002)] },
  ]);
  add("sixteen fingerprint ranges", { messageType: MT.Request, writeKey: owner.writeKey }, [],
    Array.from({ length: 16 }, (_, i) => ({
      type: RT.Fingerprint,
      upperBound: i === 15 ? inf : tb(ts(1700000000000 + i * 1000, i, "0123456789abcdef")),
      fingerprint: fp(i),
    })),
  );
  add("equal upper bounds", { messageType: MT.Request }, [], [
    { type: RT.Skip, upperBound: tb(ts(5)) },
    { type: RT.Fingerprint, upperBound: tb(ts(5)), fingerprint: fp(3) },
    { type: RT.Skip, upperBound: inf },
  ]);
  add("messages and ranges", { messageType: MT.Request, writeKey: owner.writeKey, subscriptionFlag: SF.Subscribe }, msgs.slice(0, 2), [
    { type: RT.Skip, upperBound: tb(ts(1700000000000, 1, "0123456789abcdef")) },
    { type: RT.Timestamps, upperBound: tb(ts(1800000000000)), list: [ts(1700000000003), ts(1700000000004, 9)] },
    { type: RT.Fingerprint, upperBound: inf, fingerprint: fp(4) },
  ]);

  // Size limits: canAddMessage / canSplitRange / canAddTimestampsRangeAndMessage.
  const limits = [];
  {
    const buf = lf.createProtocolMessageBuffer(owner.id, { messageType: MT.Request, writeKey: owner.writeKey });
    const sizes = [];
    let i = 0;
    for (;;) {
      const msg = m(100 + i, ts(1 + i), 60000);
      if (!buf.canAddMessage(msg)) break;
      buf.addMessage(msg);
      sizes.push(buf.getSize());
      i++;
    }
    limits.push({
      name: "1 MB request filled with 60000-byte changes (millis 1+i, counter 0, nodeId 0, change patternChange(100+i, 60000))",
      accepted: i,
      sizes,
      sha256: createHash("sha256").update(buf.unwrap()).digest("hex"),
    });
  }
  write("messages.json", {
    ...meta("ProtocolMessage bytes from createProtocolMessageBuffer (header, messages, ranges). Ranges: upperBound null = InfiniteUpperBound (not encoded). Message change bytes here are opaque; patternChange(i, n)[j] = (i*7 + j*13) & 0xff. getSize is the buffer's getSize() before unwrap."),
    ownerId: owner.id,
    ownerIdBytes: hex(lf.ownerIdToOwnerIdBytes(owner.id)),
    writeKey: hex(owner.writeKey),
    cases,
    limits,
  });
}

// ---------------------------------------------------------------- rbsr
const universe = (n, seed) => {
  // Deterministic timestamps: millis grow by 1..37, counter i % 4, two nodeIds.
  const list = [];
  let millis = 1700000000000;
  for (let i = 0; i < n; i++) {
    millis += 1 + ((i * seed) % 37);
    list.push({
      timestamp: ts(millis, i % 4, i % 5 === 0 ? "0123456789abcdef" : "fedcba9876543210"),
      change: patternChange(i, 41 + ((i * 13) % 80)),
    });
  }
  return list;
};

const exchange = async ({ name, n, seed = 3, client: clientIdx, relay: relayIdx, rangesMaxSize, totalMaxSize, changeLen, maxRounds = 100 }) => {
  let all = universe(n, seed);
  if (changeLen) all = all.map((x, i) => ({ ...x, change: patternChange(i, changeLen) }));
  const c = await openStorage({ seed: "client" });
  const r = await openStorage({ seed: "relay" });
  const ownerIdBytes = lf.ownerIdToOwnerIdBytes(owner.id);
  const load = async (s, idx) => {
    const msgs = idx.map((i) => ({ timestamp: all[i].timestamp, change: all[i].change }));
    if (msgs.length) {
      const res = await s.run(s.storage.writeMessages(ownerIdBytes, msgs));
      if (!res.ok) throw new Error("load");
    }
    // The relay needs the owner's write key set first (first write wins).
    s.storage.validateWriteKey(ownerIdBytes, owner.writeKey);
  };
  await load(c, clientIdx);
  await load(r, relayIdx);

  const transcript = [];
  let request = lf.createProtocolMessageForSync({ storage: c.storage })(owner.id, lf.SubscriptionFlags.None);
  let outcome = null;
  for (let round = 0; round < maxRounds; round++) {
    transcript.push({ from: "client", hex: hex(request) });
    const relayResult = await r.run(
      lf.applyProtocolMessageAsRelay(request, { rangesMaxSize, totalMaxSize }),
    );
    if (!relayResult.ok) throw new Error("relay: " + JSON.stringify(relayResult.error));
    const reply = relayResult.value.message;
    transcript.push({ from: "relay", hex: hex(reply) });
    const clientResult = await c.run(
      lf.applyProtocolMessageAsClient(reply, { writeKey: owner.writeKey, rangesMaxSize }),
    );
    if (!clientResult.ok) throw new Error("client: " + JSON.stringify(clientResult.error));
    outcome = clientResult.value.type;
    if (outcome !== "Response") break;
    request = clientResult.value.message;
  }
  const contents = (s) => {
    const out = [];
    const size = s.storage.getSize(ownerIdBytes);
    s.storage.iterate(ownerIdBytes, 0, size, (t) => (out.push(hex(t)), true));
    return out;
  };
  const cc = contents(c);
  const rc = contents(r);
  if (cc.join() !== rc.join()) throw new Error(`${name}: not converged`);
  const expect = [...new Set([...clientIdx, ...relayIdx])].length;
  if (cc.length !== expect) throw new Error(`${name}: union ${cc.length} != ${expect}`);
  const big = transcript.some((t) => t.hex.length > 200000);
  return {
    name,
    universe: { n, seed, changeLen: changeLen ?? null },
    client: clientIdx,
    relay: relayIdx,
    rangesMaxSize: rangesMaxSize ?? null,
    totalMaxSize: totalMaxSize ?? null,
    rounds: transcript.length / 2,
    outcome,
    transcript: big
      ? transcript.map((t) => ({ from: t.from, length: t.hex.length / 2, sha256: createHash("sha256").update(unhex(t.hex)).digest("hex") }))
      : transcript,
    final: { count: cc.length, fingerprint: hex(c.storage.fingerprint(ownerIdBytes, 0, cc.length)) },
  };
};

{
  const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);
  const every = (n, k, r) => range(0, n).filter((i) => i % k !== r);
  const ex = [];
  ex.push(await exchange({ name: "both empty", n: 0, client: [], relay: [] }));
  ex.push(await exchange({ name: "client has 3, relay empty", n: 3, client: [0, 1, 2], relay: [] }));
  ex.push(await exchange({ name: "relay has 3, client empty", n: 3, client: [], relay: [0, 1, 2] }));
  ex.push(await exchange({ name: "equal 10", n: 10, client: range(0, 10), relay: range(0, 10) }));
  ex.push(await exchange({ name: "20 vs 20, overlap 10", n: 30, client: range(0, 20), relay: range(10, 30) }));
  ex.push(await exchange({ name: "client 31 relay 0 (just under 32)", n: 31, client: range(0, 31), relay: [] }));
  ex.push(await exchange({ name: "client 0 relay 32", n: 32, client: [], relay: range(0, 32) }));
  ex.push(await exchange({ name: "300: each side a different two-thirds", n: 300, client: every(300, 3, 0), relay: every(300, 3, 1) }));
  ex.push(await exchange({ name: "1000 vs 1000 with 5 differences", n: 1005, client: range(0, 1005).filter((i) => ![3, 500, 1004].includes(i)), relay: range(0, 1005).filter((i) => ![77, 999].includes(i)) }));
  ex.push(await exchange({ name: "2000 each different two-thirds, small ranges (3000)", n: 2000, client: every(2000, 3, 0), relay: every(2000, 3, 2), rangesMaxSize: 3000 }));
  ex.push(await exchange({ name: "relay 1500 x 1000-byte changes, client empty (several rounds under 1 MB)", n: 1500, changeLen: 1000, client: [], relay: range(0, 1500) }));
  ex.push(await exchange({ name: "client 1500 x 1000-byte changes, relay empty (several rounds under 1 MB)", n: 1500, changeLen: 1000, client: range(0, 1500), relay: [] }));

  // The random-fingerprint continuation of createProtocolMessageFromCrdtMessages.
  const { deps, drawn } = recordingDeps("continuation");
  const crdt = Array.from({ length: 12 }, (_, i) =>
    ({
      timestamp: ts(1700000000000 + i, 0, "0123456789abcdef"),
      change: lf.DbChange.orThrow({ table: "big", id: "AAAAAAAAAAAAAAAAAAAAAA", values: { v: "z".repeat(100000 + i) }, isInsert: true, isDelete: null }),
    }),
  );
  const before = drawn.length;
  const cont = lf.createProtocolMessageFromCrdtMessages(deps)(owner, crdt);
  const contBytes = cont;
  write("rbsr.json", {
    ...meta("Full RBSR exchanges between two real SQLite storages of @evolu/common 8.11.0 (createRelaySqliteStorage over node:sqlite), owner testAppOwner. The client starts with createProtocolMessageForSync(ownerId, None); the relay answers with applyProtocolMessageAsRelay; the client continues with applyProtocolMessageAsClient({writeKey}) until it returns something other than Response (outcome). Universe item i: timestamp from universe(n, seed) below, change patternChange(i, changeLen ?? 41 + (i*13)%80). Transcripts over 100 KB are given as length + sha256."),
    universeRule: "millis starts at 1700000000000; for i in 0..n-1: millis += 1 + (i*seed)%37; counter = i%4; nodeId = i%5==0 ? '0123456789abcdef' : 'fedcba9876543210'",
    patternChange: "patternChange(i, len)[j] = (i*7 + j*13) & 0xff",
    ownerId: owner.id,
    writeKey: hex(owner.writeKey),
    exchanges: ex,
    continuation: {
      note: "createProtocolMessageFromCrdtMessages(owner, 12 messages of table 'big', id AAAAAAAAAAAAAAAAAAAAAA, values {v: 'z' x (100000+i)}, timestamp millis 1700000000000+i counter 0 nodeId 0123456789abcdef, isInsert true, isDelete null): not all fit in 1 MB, so a Fingerprint range with InfiniteUpperBound and a random fingerprint follows. randomBytes lists every draw in order (nonces of 24 bytes, then the 12-byte fingerprint).",
      randomBytes: drawn.slice(before),
      length: contBytes.length,
      sha256: createHash("sha256").update(contBytes).digest("hex"),
      tail: hex(contBytes.slice(contBytes.length - 40)),
    },
  });
}

// ---------------------------------------------------------------- relay replies
{
  const s = await openStorage({ seed: "relay" });
  const other = lf.createAppOwner(new Uint8Array(32).fill(9));
  const MT = lf.MessageType;
  const cases = [];
  const apply = async (name, request, opts = {}, version) => {
    const res = await s.run(lf.applyProtocolMessageAsRelay(request, opts, version));
    cases.push({
      name,
      request: hex(request),
      relayVersion: version ?? 1,
      ok: res.ok,
      reply: res.ok ? hex(res.value.message) : null,
      error: res.ok ? null : res.error.type,
    });
    return res;
  };
  const req = (o, opts, msgs = []) => {
    const b = lf.createProtocolMessageBuffer(o.id, { messageType: MT.Request, ...opts });
    for (const m of msgs) b.addMessage(m);
    return b.unwrap();
  };
  const msg = (i) => ({ timestamp: ts(1700000000000 + i, 0, "0123456789abcdef"), change: patternChange(i, 50) });
  await apply("version 2 request gets version 1 + ownerId", req(owner, { version: 2 }));
  await apply("version 1 request to a version 2 relay", req(owner, {}), {}, 2);
  await apply("empty request (no ranges) gets an empty response", req(owner, {}));
  await apply("first write key is stored", req(owner, { writeKey: owner.writeKey }, [msg(1)]));
  await apply("wrong write key", req(owner, { writeKey: other.writeKey }, [msg(2)]));
  await apply("messages without write key", req(owner, {}, [msg(3)]));
  await apply("right write key, duplicate message", req(owner, { writeKey: owner.writeKey }, [msg(1)]));
  await apply("truncated request", req(owner, { writeKey: owner.writeKey }, [msg(4)]).slice(0, 40));
  await apply("response type sent to relay", lf.createProtocolMessageBuffer(owner.id, { messageType: MT.Response, errorCode: 0 }).unwrap());
  await apply("garbage", unhex("ff"));
  // What the client makes of relay replies.
  const c = await openStorage({ seed: "client" });
  const clientCases = [];
  const onClient = async (name, reply, writeKey = owner.writeKey) => {
    const res = await c.run(lf.applyProtocolMessageAsClient(reply, { writeKey }));
    clientCases.push({
      name,
      reply: hex(reply),
      withWriteKey: writeKey != null,
      ok: res.ok,
      outcome: res.ok ? res.value.type : null,
      error: res.ok ? null : res.error.type,
      isInitiator: res.ok ? null : res.error.isInitiator ?? null,
      message: res.ok && res.value.message ? hex(res.value.message) : null,
    });
  };
  const resp = (code, v) => lf.createProtocolMessageBuffer(owner.id, { messageType: MT.Response, errorCode: code, version: v }).unwrap();
  for (const [ename, code] of Object.entries(lf.ProtocolErrorCode)) await onClient(`response ${ename}`, resp(code));
  await onClient("response code 5", (() => { const b = resp(0); b[b.length - 1] = 5; return b; })());
  await onClient("version 2 reply", unhex(cases[0].reply.replace(/^01/, "02")));
  await onClient("version 1 only reply (version + ownerId)", unhex(cases[0].reply));
  await onClient("version 0 reply", unhex(cases[0].reply.replace(/^01/, "00")));
  await onClient("broadcast with a message", (() => { const b = lf.createProtocolMessageBuffer(owner.id, { messageType: MT.Broadcast }); b.addMessage(msg(5)); return b.unwrap(); })());
  await onClient("response with a message, no write key", (() => { const b = lf.createProtocolMessageBuffer(owner.id, { messageType: MT.Response, errorCode: 0 }); b.addMessage(msg(6)); return b.unwrap(); })(), undefined);
  await onClient("request sent to client", req(owner, {}));
  write("replies.json", {
    ...meta("applyProtocolMessageAsRelay replies (relay: a fresh 8.11.0 SQLite storage, cases applied in order) and applyProtocolMessageAsClient outcomes for given replies. Message changes: patternChange(i, 50) at millis 1700000000000+i, counter 0, nodeId 0123456789abcdef."),
    ownerId: owner.id,
    writeKey: hex(owner.writeKey),
    otherWriteKey: hex(other.writeKey),
    relay: cases,
    client: clientCases,
  });
}
