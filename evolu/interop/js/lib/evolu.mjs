// evolu.mjs — the real @evolu/common 8.11.0 (installed in
// $FERRY_EVOLU_CLIENT_DIR) plus the few adapters the interop scripts need:
//
//   - a SqliteDriver over node:sqlite (Node 24's built-in SQLite), so the
//     package's own SQLite storage (createRelaySqliteStorage: skiplist
//     fingerprints, write-key table, dedupe) backs the TS side; nothing of the
//     protocol is reimplemented here;
//   - hex helpers.
import { DatabaseSync } from "node:sqlite";
import { timingSafeEqual } from "node:crypto";
import { importFrom } from "./load.mjs";

// installPolyfills: Map.prototype.getOrInsertComputed etc., which Node 24
// lacks and the package's own docs say to install on Node 24.
const polyfills = await importFrom("FERRY_EVOLU_CLIENT_DIR", "@evolu/common/polyfills");
polyfills.installPolyfills();

export const common = await importFrom("FERRY_EVOLU_CLIENT_DIR", "@evolu/common");
export const lf = await importFrom("FERRY_EVOLU_CLIENT_DIR", "@evolu/common/local-first");

export const hex = (bytes) => Buffer.from(bytes).toString("hex");
export const unhex = (s) => new Uint8Array(Buffer.from(s, "hex"));

/**
 * A CreateSqliteDriver over node:sqlite: an in-memory database, or the file
 * `path` when given (the package's `name` argument is ignored).
 */
export const createNodeSqliteDriver = (path) => (_name, options) => () => {
  const db = new DatabaseSync(path && options?.mode !== "memory" ? path : ":memory:");
  const cache = new Map();
  const prepare = (sql) => {
    let s = cache.get(sql);
    if (!s) {
      s = db.prepare(sql);
      cache.set(sql, s);
    }
    return s;
  };
  return common.ok({
    exec: (query) => {
      const stmt = prepare(query.sql);
      if (stmt.columns().length > 0) {
        return { rows: stmt.all(...query.parameters), changes: 0 };
      }
      return { rows: [], changes: Number(stmt.run(...query.parameters).changes) };
    },
    export: () => {
      throw new Error("export is not supported");
    },
    deleteDatabase: () => db.close(),
    [Symbol.dispose]: () => {
      if (db.isOpen) db.close();
    },
  });
};

/**
 * Opens a Storage of the real package: createRelaySqliteStorage over an
 * in-memory (or file, when `file` is given) SQLite. Returns { run, storage,
 * sqlite } where `run` is a Run whose deps include the storage, ready for
 * applyProtocolMessageAsClient / applyProtocolMessageAsRelay.
 */
export const openStorage = async ({ file, seed = "evolu", quota, console: console_ } = {}) => {
  const baseDeps = {
    ...common.testCreateDeps({ seed }),
    ...(console_ && { console: console_ }),
    createSqliteDriver: createNodeSqliteDriver(file),
    timingSafeEqual: (a, b) => a.length === b.length && timingSafeEqual(a, b),
  };
  const run0 = common.testCreateRun(baseDeps);
  const sqlite = await run0.orThrow(
    common.createSqlite(common.Name.orThrow("ferry"), file ? undefined : { mode: "memory" }),
  );
  const deps = { ...baseDeps, sqlite };
  const fresh = sqlite.exec(common.sql`select name from sqlite_master where name = 'evolu_timestamp';`).rows.length === 0;
  if (fresh) {
    lf.createBaseSqliteStorageTables(deps);
    lf.createRelayStorageTables(deps);
  }
  const storage = lf.createRelaySqliteStorage(deps)({
    isOwnerWithinQuota: (_o, bytes) => !quota || bytes <= quota,
  });
  const run = common.testCreateRun({ ...deps, storage });
  return { run, storage, sqlite };
};
