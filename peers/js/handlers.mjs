// The five routes with the semantics of crates/handlers, for the JavaScript peers (Node, Bun,
// Deno): one module, so the three differ only in their HTTP servers. SHA-256 is node:crypto's
// (OpenSSL in Node, BoringSSL in Bun, Rust's in Deno), not portable code: the report says so.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { BYTES, ITERS_ERROR, ROUTES, SEED, TEXT, itersOf } from "./routes.mjs";

let counter = 0;

const hex = (bytes) => Buffer.from(bytes).toString("hex");

/** `state = SEED; repeat iters times: state = sha256(state)`, as lowercase hex. */
export function chainedSha256Hex(iters) {
  if (iters === 0) return hex(SEED);
  let digest = createHash("sha256").update(SEED).digest();
  for (let i = 1; i < iters; i++) digest = createHash("sha256").update(digest).digest();
  return digest.toString("hex");
}

const text = (status, body) => ({ status, headers: { "content-type": TEXT }, body });

/** A request in (`target` is path and query; `body` a Uint8Array), a response out. */
export async function handle(method, target, body, upstream) {
  const q = target.indexOf("?");
  const path = q < 0 ? target : target.slice(0, q);
  const allowed = ROUTES[path];
  if (allowed === undefined) return text(404, "not found");
  if (method !== allowed) {
    const r = text(405, "method not allowed");
    r.headers.allow = allowed;
    return r;
  }
  switch (path) {
    case "/":
      return text(200, "hello");
    case "/compute": {
      const iters = itersOf(new URLSearchParams(q < 0 ? "" : target.slice(q + 1)));
      if (iters === null) return text(400, ITERS_ERROR);
      return text(200, chainedSha256Hex(iters));
    }
    case "/state":
      counter += 1;
      return text(200, String(counter));
    case "/proxy": {
      if (!upstream) return text(502, "upstream error: no upstream configured");
      try {
        const resp = await fetch(upstream + target);
        return { status: 200, headers: { "content-type": BYTES }, body: new Uint8Array(await resp.arrayBuffer()) };
      } catch (e) {
        return text(502, `upstream error: ${e.message}`);
      }
    }
    case "/echo":
      return { status: 200, headers: { "content-type": BYTES }, body };
  }
}

/** The options, or one line on stderr and exit status 2. */
export function optionsOrExit(program, args) {
  try {
    return options(args);
  } catch (e) {
    console.error(`${program}: error: ${e.message}`);
    globalThis.Deno ? Deno.exit(2) : process.exit(2);
  }
}

/** `--port N --host H --upstream URL` from the command line. */
export function options(args) {
  const o = { port: 8080, host: "127.0.0.1", upstream: "" };
  for (let i = 0; i < args.length; i += 2) {
    const [k, v] = [args[i], args[i + 1]];
    if (v === undefined) throw new Error(`${k} needs a value`);
    if (k === "--port") {
      o.port = /^[0-9]{1,5}$/.test(v) ? Number(v) : NaN;
      if (!(o.port <= 65535)) throw new Error(`--port ${v}: not a port (0 to 65535)`);
    }
    else if (k === "--host") o.host = v;
    else if (k === "--upstream") o.upstream = v.replace(/\/$/, "");
    else throw new Error(`unknown option ${k} (give --port, --host, --upstream)`);
  }
  return o;
}
