// workerd-js: the fetch handler around wasmlab's JavaScript routes (handlers.mjs, shared with the
// Node, Bun and Deno peers). /state's counter is handlers.mjs's module-level one: one per isolate,
// and workerd runs this Worker in one isolate. The upstream's URL is the UPSTREAM binding.
import { handle } from "./handlers.mjs";

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const body = new Uint8Array(await request.arrayBuffer());
    const upstream = (env.UPSTREAM || "").replace(/\/$/, "");
    const r = await handle(request.method, url.pathname + url.search, body, upstream);
    return new Response(r.body, { status: r.status, headers: r.headers });
  },
};
