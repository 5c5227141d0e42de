// relay-811.mjs — a relay made of @evolu/common 8.11.0's own relay code
// (applyProtocolMessageAsRelay + createRelaySqliteStorage), served the way
// @evolu/nodejs startRelay serves it: an http server whose upgrade goes to a
// `ws` WebSocketServer (maxPayload defaultProtocolMessageMaxSize), one binary
// frame per message, replies in order of completion, broadcasts to the other
// sockets subscribed to the owner.
//
// Why: @evolu/nodejs 3.0.0-next.3 (the only published Node relay) loads only
// with @evolu/common 8.0.0-next.5, whose splitRange lists the wrong
// timestamps for a small range that does not start at index 0. Ferry follows
// 8.11.0, so bytes on the wire are compared against this relay as well
// (docs/decisions/evolu-interop-relay-811.md). SQLite is node:sqlite here
// (no second native build); the storage code is the package's.
//
// Usage: FERRY_EVOLU_CLIENT_DIR=... node relay-811.mjs <data dir>
// Prints {"ready":true,"address":"127.0.0.1","port":N,"pid":P,"common":"8.11.0"}
// and stops on SIGTERM/SIGINT or when stdin closes.
import http from "node:http";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { common, lf, openStorage } from "./lib/evolu.mjs";
import { importFrom } from "./lib/load.mjs";

const dataDir = process.argv[2];
if (!dataDir) {
  console.error("usage: relay-811.mjs <data dir>");
  process.exit(2);
}
mkdirSync(dataDir, { recursive: true });

// ws resolves to its CommonJS entry: take the classes from module.exports.
const ws_ = (await importFrom("FERRY_EVOLU_CLIENT_DIR", "ws")).default;
const { WebSocketServer, WebSocket } = ws_;
const relayConsole = common.createConsole({ level: process.env.FERRY_EVOLU_RELAY_LOG ?? "warn" });
const s = await openStorage({ file: join(dataDir, "evolu-relay.db"), seed: "relay", console: relayConsole });

const server = http.createServer();
const wss = new WebSocketServer({ maxPayload: lf.defaultProtocolMessageMaxSize, noServer: true });
const subscribers = new Map(); // OwnerId -> Set<WebSocket>

server.on("upgrade", (request, socket, head) => {
  wss.handleUpgrade(request, socket, head, (ws) => wss.emit("connection", ws, request));
});

wss.on("connection", (ws) => {
  const options = {
    subscribe: (ownerId) => {
      if (!subscribers.has(ownerId)) subscribers.set(ownerId, new Set());
      subscribers.get(ownerId).add(ws);
    },
    unsubscribe: (ownerId) => subscribers.get(ownerId)?.delete(ws),
    broadcast: (ownerId, message) => {
      for (const socket of subscribers.get(ownerId) ?? []) {
        if (socket !== ws && socket.readyState === WebSocket.OPEN) socket.send(message, { binary: true });
      }
    },
  };
  ws.on("message", (message) => {
    if (!(message instanceof Uint8Array)) return;
    void (async () => {
      const response = await s.run(lf.applyProtocolMessageAsRelay(message, options));
      if (!response.ok) {
        relayConsole.error(response);
        return;
      }
      ws.send(response.value.message, { binary: true });
    })();
  });
  ws.on("close", () => {
    for (const set of subscribers.values()) set.delete(ws);
  });
});

server.listen(0, "127.0.0.1");
await new Promise((resolve) => server.once("listening", resolve));
const addr = server.address();
process.stdout.write(
  JSON.stringify({ ready: true, address: addr.address, port: addr.port, pid: process.pid, common: "8.11.0" }) + "\n",
);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  for (const client of wss.clients) client.close(1000, "Evolu Relay shutting down");
  await new Promise((resolve) => wss.close(resolve));
  await new Promise((resolve) => server.close(resolve));
  s.sqlite[Symbol.dispose]?.();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.resume();
