// Bun.serve, one process; the routes are ../js/handlers.mjs. `bun server.mjs --port 0
// --upstream http://127.0.0.1:9000` prints `listening on http://ADDR` once bound.
import { handle, optionsOrExit } from "../js/handlers.mjs";

const o = optionsOrExit("bun-http", process.argv.slice(2));
const server = Bun.serve({
  port: o.port,
  hostname: o.host,
  async fetch(req) {
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const r = await handle(req.method, url.pathname + url.search, body, o.upstream);
    return new Response(r.body, { status: r.status, headers: r.headers });
  },
});
console.log(`listening on http://${o.host.includes(":") ? `[${o.host}]` : o.host}:${server.port}`);
