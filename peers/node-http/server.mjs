// node:http, one process (one thread runs JavaScript), keep-alive, TCP_NODELAY; the routes are
// ../js/handlers.mjs. `node server.mjs --port 0 --upstream http://127.0.0.1:9000` prints
// `listening on http://ADDR` once bound.
import http from "node:http";
import { handle, optionsOrExit } from "../js/handlers.mjs";

const o = optionsOrExit("node-http", process.argv.slice(2));
const server = http.createServer({ noDelay: true, keepAlive: true }, (req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    const r = await handle(req.method, req.url, Buffer.concat(chunks), o.upstream);
    res.writeHead(r.status, { ...r.headers, "content-length": Buffer.byteLength(r.body) });
    res.end(r.body);
  });
});
server.listen(o.port, o.host, () => {
  const a = server.address();
  console.log(`listening on http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}`);
});
