// What every JavaScript server of wasmlab's answers alike (the Node, Bun and Deno peers through
// handlers.mjs, and the JavaScript component): the routes, content types, the compute chain's seed
// and bounds. Web APIs only, so that SpiderMonkey in Wasm, which has no `node:` modules, loads it.

export const TEXT = "text/plain; charset=utf-8";
export const BYTES = "application/octet-stream";
export const SEED = new TextEncoder().encode("wasmlab");
export const DEFAULT_ITERS = 20000;
export const MAX_ITERS = 10000000;
export const ROUTES = { "/": "GET", "/compute": "GET", "/state": "GET", "/proxy": "GET", "/echo": "POST" };

/** `/compute`'s iteration count from its query, or null when it is not an integer in 0..=MAX_ITERS
 * (the 400's message is `ITERS_ERROR`). */
export function itersOf(params) {
  if (!params.has("iters")) return DEFAULT_ITERS;
  const v = params.get("iters");
  const iters = /^\+?[0-9]{1,10}$/.test(v) ? Number(v) : NaN;
  return iters <= MAX_ITERS ? iters : null;
}

export const ITERS_ERROR = `iters must be an integer in 0..=${MAX_ITERS}`;
