// Deno.serve, one process; the routes are ../js/handlers.mjs. `deno run --allow-net
// server.mjs --port 0 --upstream http://127.0.0.1:9000` prints `listening on http://ADDR`.
import { handle, optionsOrExit } from "../js/handlers.mjs";

const o = optionsOrExit("deno-http", Deno.args);
Deno.serve(
  {
    port: o.port,
    hostname: o.host,
    onListen: ({ hostname, port }) =>
      console.log(`listening on http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`),
  },
  async (req) => {
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const r = await handle(req.method, url.pathname + url.search, body, o.upstream);
    return new Response(r.body, { status: r.status, headers: r.headers });
  },
);
