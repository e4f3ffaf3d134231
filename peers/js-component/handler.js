// wasmlab's five routes in JavaScript, for componentize-js: SpiderMonkey (StarlingMonkey) compiled
// to Wasm with this module pre-initialised into it (Wizer), a wasi:http/proxy component whose
// `fetch` event serves each request. The semantics are crates/handlers' (peers/js/handlers.mjs is
// the same for Node, Bun and Deno; both take their routes and bounds from peers/js/routes.mjs), with
// what a component has instead of a process:
// - the upstream's URL comes from the environment (WASMLAB_UPSTREAM), read per request: a value
//   read at the top level would be the one Wizer saw when the component was built;
// - the /state counter lives on the upstream (`POST /wasmlab/counter`), as for wasmlab's Rust
//   component: an instance made for one request keeps nothing for the next;
// - SHA-256 is the engine's SubtleCrypto (C++ compiled into the component), not portable JS.
import { getEnvironment } from "wasi:cli/environment@0.2.10";
import { BYTES, ITERS_ERROR, ROUTES, SEED, TEXT, itersOf } from "../js/routes.mjs";
const COUNTER_PATH = "/wasmlab/counter";

const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");

/** `state = SEED; repeat iters times: state = sha256(state)`, as lowercase hex. */
async function chainedSha256Hex(iters) {
  let state = SEED;
  for (let i = 0; i < iters; i++) state = await crypto.subtle.digest("SHA-256", state);
  return hex(state);
}

const text = (status, body, headers = {}) =>
  new Response(body, { status, headers: { "content-type": TEXT, ...headers } });
const bytes = (body) => new Response(body, { status: 200, headers: { "content-type": BYTES } });

function upstream() {
  for (const [k, v] of getEnvironment()) if (k === "WASMLAB_UPSTREAM") return v.replace(/\/$/, "");
  return "";
}

/** The upstream's answer to `method path`: its body on a 2xx, else an error naming the status. */
async function exchange(method, path) {
  const base = upstream();
  if (!base) throw new Error("no upstream configured (the environment has no WASMLAB_UPSTREAM)");
  const resp = await fetch(base + path, { method });
  const body = new Uint8Array(await resp.arrayBuffer());
  if (!resp.ok) throw new Error(`upstream answered ${resp.status}`);
  return body;
}

async function handle(request) {
  const url = new URL(request.url);
  const target = url.pathname + url.search;
  const allowed = ROUTES[url.pathname];
  if (allowed === undefined) return text(404, "not found");
  if (request.method !== allowed) return text(405, "method not allowed", { allow: allowed });
  switch (url.pathname) {
    case "/":
      return text(200, "hello");
    case "/compute": {
      const iters = itersOf(url.searchParams);
      if (iters === null) return text(400, ITERS_ERROR);
      return text(200, await chainedSha256Hex(iters));
    }
    case "/state":
      try {
        const value = new TextDecoder().decode(await exchange("POST", COUNTER_PATH)).trim();
        if (!/^[0-9]+$/.test(value)) throw new Error(`the upstream's counter answered ${JSON.stringify(value)}`);
        return text(200, value);
      } catch (e) {
        return text(502, `counter error: ${e.message}`);
      }
    case "/proxy":
      try {
        return bytes(await exchange("GET", target));
      } catch (e) {
        return text(502, `upstream error: ${e.message}`);
      }
    case "/echo":
      return bytes(new Uint8Array(await request.arrayBuffer()));
  }
}

addEventListener("fetch", (event) => event.respondWith(handle(event.request)));
