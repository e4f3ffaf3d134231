// A small HTTP service in JavaScript, as a componentize-js user writes one: a `fetch` event
// handler (StarlingMonkey's, the Service Worker API) compiled into a wasi:http/proxy component,
// nothing of wasmlab's. The tests build it and put it in every component host:
//   node peers/js-component/build.mjs --tools TOOLS --source examples/components/js/hello.js \
//     --wit examples/components/js/world.wit --world hello --out hello_js.wasm
//   wasmlab run --component hello_js.wasm
//
// - `GET /` answers `hello from JavaScript`;
// - `GET /greet?name=NAME` answers `hello, NAME`;
// - `GET /env?name=KEY` answers the value of the environment variable KEY (404 when unset);
// - `GET /fetch` fetches the URL in `FETCH_URL` and answers the status it got, or 502 with the
//   host's error when the request was refused or failed;
// - `GET /remember?secret=S` keeps S in a global, as a careless cache would, and `GET /recall`
//   answers what it kept: in a host that gives each request a fresh instance (or one reset to
//   fresh), never what another request left;
// - `GET /allocate?kib=N` allocates N KiB (at most 4096), fills them and answers how many;
// - anything else is 404.
import { getEnvironment } from "wasi:cli/environment@0.2.10";

const text = (status, body) =>
  new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });

// Read per request: a value read at the top level is the one the build saw (Wizer runs it then).
const env = (key) => getEnvironment().find(([k]) => k === key)?.[1];

let remembered = null;

async function handle(request) {
  const url = new URL(request.url);
  if (request.method !== "GET") return text(405, "only GET\n");
  switch (url.pathname) {
    case "/":
      return text(200, "hello from JavaScript\n");
    case "/greet":
      return text(200, `hello, ${url.searchParams.get("name") ?? "stranger"}\n`);
    case "/env": {
      const key = url.searchParams.get("name") ?? "";
      const value = env(key);
      return value === undefined ? text(404, `no variable ${key}\n`) : text(200, `${value}\n`);
    }
    case "/fetch": {
      const target = env("FETCH_URL");
      if (target === undefined) return text(404, "no FETCH_URL in the environment\n");
      try {
        const answer = await fetch(target);
        await answer.arrayBuffer();
        return text(200, `${target} answered ${answer.status}\n`);
      } catch (e) {
        return text(502, `${target}: ${e}\n`);
      }
    }
    case "/remember":
      remembered = url.searchParams.get("secret") ?? "";
      return text(200, "remembered\n");
    case "/recall":
      return text(200, remembered === null ? "nothing remembered\n" : `remembered ${remembered}\n`);
    case "/allocate": {
      const kib = Math.min(Number(url.searchParams.get("kib") ?? "64") || 0, 4096);
      const bytes = new Uint8Array(kib * 1024).fill(1);
      return text(200, `allocated ${bytes.length} bytes\n`);
    }
    default:
      return text(404, `no route ${url.pathname}\n`);
  }
}

addEventListener("fetch", (event) => event.respondWith(handle(event.request)));
