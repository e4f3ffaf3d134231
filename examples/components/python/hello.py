# A small HTTP service in Python, as a componentize-py user writes one: a wasi:http incoming
# handler over the bindings componentize-py generates for the world (world.wit), compiled with
# CPython into a wasi:http/proxy component, nothing of wasmlab's. The tests build it and put it in
# every component host:
#   python3 peers/py-component/build.py --tools TOOLS --source examples/components/python/hello.py \
#     --wit examples/components/python/world.wit --world hello --out hello_py.wasm
#   wasmlab run --component hello_py.wasm
# (build.py gives componentize-py WASI's WIT; with your own copy in wit/deps, it is
# `componentize-py -d wit -w hello componentize -p . hello -o hello_py.wasm`.)
#
# - `GET /` answers `hello from Python`;
# - `GET /greet?name=NAME` answers `hello, NAME`;
# - `GET /env?name=KEY` answers the value of the environment variable KEY (404 when unset);
# - `GET /fetch` fetches the URL in `FETCH_URL` and answers the status it got, or 502 with the
#   host's error when the request was refused or failed;
# - `GET /remember?secret=S` keeps S in a global, as a careless cache would, and `GET /recall`
#   answers what it kept: in a host that gives each request a fresh instance (or one reset to
#   fresh), never what another request left;
# - `GET /allocate?kib=N` allocates N KiB (at most 4096), fills them and answers how many;
# - anything else is 404, any other method 405.
from urllib.parse import parse_qs, urlsplit

from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import outgoing_handler
from wit_world.imports.environment import get_environment
from wit_world.imports.types import (
    Fields,
    IncomingRequest,
    Method_Get,
    OutgoingBody,
    OutgoingRequest,
    OutgoingResponse,
    ResponseOutparam,
    Scheme_Http,
)


remembered = None


def env(key):
    return dict(get_environment()).get(key)


def fetch(url):
    parts = urlsplit(url)
    if parts.scheme != "http":
        raise ValueError("not an http:// URL")
    request = OutgoingRequest(Fields())
    request.set_scheme(Scheme_Http())
    request.set_authority(parts.netloc)
    request.set_path_with_query((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    body = request.body()
    future = outgoing_handler.handle(request, None)
    OutgoingBody.finish(body, None)
    with future:
        while (answer := future.get()) is None:
            with future.subscribe() as ready:
                ready.block()
    if isinstance(answer, Err) or isinstance(answer.value, Err):
        raise RuntimeError(str(answer.value if isinstance(answer, Err) else answer.value.value))
    with answer.value.value as response:
        return response.status()


def send(out, status, text):
    response = OutgoingResponse(Fields.from_list([("content-type", b"text/plain; charset=utf-8")]))
    response.set_status_code(status)
    body = response.body()
    ResponseOutparam.set(out, Ok(response))
    with body.write() as stream:
        stream.blocking_write_and_flush(text.encode())
    OutgoingBody.finish(body, None)


class IncomingHandler(exports.IncomingHandler):
    def handle(self, request: IncomingRequest, response_out: ResponseOutparam) -> None:
        global remembered
        target = urlsplit(request.path_with_query() or "/")
        query = parse_qs(target.query)
        if not isinstance(request.method(), Method_Get):
            return send(response_out, 405, "only GET\n")
        if target.path == "/":
            return send(response_out, 200, "hello from Python\n")
        if target.path == "/greet":
            return send(response_out, 200, f"hello, {query.get('name', ['stranger'])[0]}\n")
        if target.path == "/env":
            key = query.get("name", [""])[0]
            value = env(key)
            if value is None:
                return send(response_out, 404, f"no variable {key}\n")
            return send(response_out, 200, f"{value}\n")
        if target.path == "/fetch":
            url = env("FETCH_URL")
            if url is None:
                return send(response_out, 404, "no FETCH_URL in the environment\n")
            try:
                return send(response_out, 200, f"{url} answered {fetch(url)}\n")
            except Exception as e:
                return send(response_out, 502, f"{url}: {e}\n")
        if target.path == "/remember":
            remembered = query.get("secret", [""])[0]
            return send(response_out, 200, "remembered\n")
        if target.path == "/recall":
            if remembered is None:
                return send(response_out, 200, "nothing remembered\n")
            return send(response_out, 200, f"remembered {remembered}\n")
        if target.path == "/allocate":
            kib = min(int(query.get("kib", ["64"])[0] or 0), 4096)
            data = bytearray(b"\x01") * (kib * 1024)
            return send(response_out, 200, f"allocated {len(data)} bytes\n")
        return send(response_out, 404, f"no route {target.path}\n")
