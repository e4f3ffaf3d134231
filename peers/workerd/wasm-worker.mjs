// workerd-wasm: wasmlab's core-module guest (ABI 1, docs/guest-abi.md) behind a Worker's fetch
// handler, as workers-rs apps run: the module compiled once when the Worker loads, an instance
// kept in the isolate and called for request after request (nothing reset between them but the
// guest's own arena, which it empties at the start of each call).
//
// proxy_get is a synchronous import, fetch() is not: JSPI bridges them. The import is a
// WebAssembly.Suspending around an async function and the export is called through
// WebAssembly.promising, so the guest's stack is suspended while the upstream answers. An instance
// suspended so cannot take another request (its arena is in use): a request that finds none free
// makes another, so there are more instances only while requests wait on the upstream.
//
// /state's counter is the Worker's, one per isolate (workerd runs this Worker in one isolate).
import guestModule from "./guest.wasm";

const ABI_VERSION = 1;
const TEXT = "text/plain; charset=utf-8";
// Framing and connection headers are the server's to write, never the guest's.
const FRAMING = new Set(["content-length", "transfer-encoding", "trailer", "connection", "keep-alive", "upgrade", "te"]);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

let counter = 0n;
let upstream = "";
const idle = [];

/** A new instance of the guest, with the request it is serving and the upstream body it keeps. */
function instantiate() {
  const guest = { exports: null, request: null, kept: new Uint8Array(0) };
  const bytes = () => new Uint8Array(guest.exports.memory.buffer);
  const wasmlab = {
    request_sizes(out) {
      const v = new DataView(guest.exports.memory.buffer);
      const { method, target, body } = guest.request;
      v.setUint32(out, method.length, true);
      v.setUint32(out + 4, target.length, true);
      v.setUint32(out + 8, body.length, true);
    },
    request_read(methodPtr, targetPtr, bodyPtr) {
      const m = bytes();
      m.set(guest.request.method, methodPtr);
      m.set(guest.request.target, targetPtr);
      m.set(guest.request.body, bodyPtr);
    },
    state_increment() {
      counter += 1n;
      return counter;
    },
    proxy_get: new WebAssembly.Suspending(async (ptr, len) => {
      // Read before suspending: the guest's memory is only valid now.
      const target = decoder.decode(bytes().slice(ptr, ptr + len));
      try {
        if (!upstream) throw new Error("no upstream configured (the environment has no WASMLAB_UPSTREAM)");
        const resp = await fetch(upstream + target);
        const body = new Uint8Array(await resp.arrayBuffer());
        if (!resp.ok) throw new Error(`upstream answered ${resp.status}`);
        guest.kept = body;
        return BigInt(body.length);
      } catch (e) {
        guest.kept = encoder.encode(String(e?.message ?? e));
        return -BigInt(guest.kept.length + 1);
      }
    }),
    proxy_take(dst, len) {
      const n = Math.min(len, guest.kept.length);
      bytes().set(guest.kept.subarray(0, n), dst);
      return n;
    },
  };
  const instance = new WebAssembly.Instance(guestModule, { wasmlab });
  const abi = instance.exports.wasmlab_abi_version();
  if (abi !== ABI_VERSION) throw new Error(`the guest speaks ABI ${abi}, not ${ABI_VERSION}`);
  guest.exports = instance.exports;
  guest.handle = WebAssembly.promising(instance.exports.wasmlab_handle);
  return guest;
}

/** The response the guest left at `ptr`, copied out of its memory, every bound checked. */
function response(guest, ptr) {
  const memory = guest.exports.memory.buffer;
  const m = new Uint8Array(memory);
  if (ptr + 20 > m.length) throw new Error(`response descriptor at ${ptr} is outside memory`);
  const v = new DataView(memory);
  const [status, headersPtr, headersLen, bodyPtr, bodyLen] = [0, 4, 8, 12, 16].map((o) => v.getUint32(ptr + o, true));
  if (status < 200 || status > 599) throw new Error(`the guest answered status ${status}`);
  if (headersPtr + headersLen > m.length || bodyPtr + bodyLen > m.length) throw new Error("headers or body outside memory");
  const headers = new Headers();
  for (const line of decoder.decode(m.subarray(headersPtr, headersPtr + headersLen)).split("\n")) {
    if (!line) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`malformed header line ${JSON.stringify(line)}`);
    const name = line.slice(0, colon).trim();
    if (!FRAMING.has(name.toLowerCase())) headers.append(name, line.slice(colon + 1).trim());
  }
  const empty = status === 204 || status === 205 || status === 304;
  return new Response(empty ? null : m.slice(bodyPtr, bodyPtr + bodyLen), { status, headers });
}

export default {
  async fetch(request, env) {
    upstream = (env.UPSTREAM || "").replace(/\/$/, "");
    const url = new URL(request.url);
    const body = new Uint8Array(await request.arrayBuffer());
    const guest = idle.pop() ?? instantiate();
    guest.request = { method: encoder.encode(request.method), target: encoder.encode(url.pathname + url.search), body };
    try {
      const resp = response(guest, await guest.handle());
      // Kept only after a call that returned: one that trapped is dropped with its state.
      idle.push(guest);
      return resp;
    } catch (e) {
      console.error(`the guest failed: ${request.method} ${url.pathname}: ${e?.stack ?? e}`);
      return new Response("the handler failed\n", { status: 500, headers: { "content-type": TEXT } });
    }
  },
};
