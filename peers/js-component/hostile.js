// A JavaScript wasi:http component that fails without answering, for the gateway's tests (built
// by build.mjs --source hostile.js): its `fetch` handler throws (`/throw`), or lets a refused
// outgoing request's rejection escape (`/fetch?authority=A`); `/` answers `ok`.
addEventListener("fetch", (event) =>
  event.respondWith(
    (async () => {
      const url = new URL(event.request.url);
      switch (url.pathname) {
        case "/throw":
          throw new Error("the handler threw");
        case "/fetch": {
          const resp = await fetch(`http://${url.searchParams.get("authority")}/`);
          return new Response(await resp.arrayBuffer());
        }
        default:
          return new Response("ok");
      }
    })(),
  ),
);
