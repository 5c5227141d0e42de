// relay.mjs — runs the real Evolu relay (@evolu/nodejs startRelay) on
// 127.0.0.1 for the interop tests and benchmarks.
//
// Usage: FERRY_EVOLU_RELAY_DIR=... node relay.mjs <data dir>
//
// startRelay has no host option and calls server.listen(port), which binds
// every interface. Before it runs we wrap net.Server.prototype.listen so a
// listen call without a host binds 127.0.0.1 (see
// docs/decisions/evolu-interop-relay-loopback.md). Port 0 lets the kernel
// pick a free port. When listening, one JSON line goes to stdout:
//   {"ready":true,"address":"127.0.0.1","port":N,"pid":P}
// The relay stops on SIGTERM/SIGINT or when stdin closes.
import net from "node:net";
import { mkdirSync } from "node:fs";
import { importFrom } from "./lib/load.mjs";

const dataDir = process.argv[2];
if (!dataDir) {
  console.error("usage: relay.mjs <data dir>");
  process.exit(2);
}
mkdirSync(dataDir, { recursive: true });
process.chdir(dataDir); // startRelay opens ./<name>.db

const servers = [];
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  servers.push(this);
  if (typeof args[0] === "number" && (args.length === 1 || typeof args[1] === "function")) {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};

const common = await importFrom("FERRY_EVOLU_RELAY_DIR", "@evolu/common");
const nodejs = await importFrom("FERRY_EVOLU_RELAY_DIR", "@evolu/nodejs");

const level = process.env.FERRY_EVOLU_RELAY_LOG ?? "warn";
const console_ = common.createConsole({ level });
const deps = { ...nodejs.createRelayDeps(), console: console_ };
const run = common.createRun(deps);

const quota = Number(process.env.FERRY_EVOLU_RELAY_QUOTA ?? 0);
const relay = await run.orThrow(
  nodejs.startRelay({
    port: 0,
    isOwnerWithinQuota: (_ownerId, bytes) => quota <= 0 || bytes <= quota,
  }),
);

const addr = servers.map((s) => s.address()).find((a) => a && a.port === relay.port);
process.stdout.write(
  JSON.stringify({ ready: true, address: addr?.address, port: relay.port, pid: process.pid }) + "\n",
);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await relay[Symbol.asyncDispose]();
  await run[Symbol.asyncDispose]?.();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.resume();
