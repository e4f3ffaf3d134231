# wasmlab's five routes in Python, for componentize-py: CPython compiled to Wasm with this module
# imported into it at build time (componentize-py pre-initialises the interpreter), a
# wasi:http/proxy component whose incoming handler serves each request. The semantics are
# crates/handlers' (peers/js/routes.mjs says the same for JavaScript), with what a component has
# instead of a process:
# - the upstream's URL comes from the environment (WASMLAB_UPSTREAM), read per request: a value
#   read at import would be the one the build saw;
# - the /state counter lives on the upstream (`POST /wasmlab/counter`), as for wasmlab's Rust
#   component: an instance made for one request keeps nothing for the next;
# - SHA-256 is CPython's hashlib (its C code compiled into the component), not portable Python.
# Written against the WASI interfaces directly, blocking on each pollable: one request at a time
# per instance, as every host here serves them.
import hashlib
import re

from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import outgoing_handler
from wit_world.imports.environment import get_environment
from wit_world.imports.streams import StreamError_Closed
from wit_world.imports.types import (
    Fields,
    IncomingBody,
    IncomingRequest,
    Method_Get,
    Method_Post,
    OutgoingBody,
    OutgoingRequest,
    OutgoingResponse,
    ResponseOutparam,
    Scheme_Http,
    Scheme_Https,
)

TEXT = b"text/plain; charset=utf-8"
BYTES = b"application/octet-stream"
SEED = b"wasmlab"
DEFAULT_ITERS = 20000
MAX_ITERS = 10000000
ITERS_ERROR = f"iters must be an integer in 0..={MAX_ITERS}"
ROUTES = {"/": "GET", "/compute": "GET", "/state": "GET", "/proxy": "GET", "/echo": "POST"}
COUNTER_PATH = "/wasmlab/counter"
CHUNK = 64 * 1024


def method_name(method):
    if isinstance(method, Method_Get):
        return "GET"
    if isinstance(method, Method_Post):
        return "POST"
    return getattr(method, "value", None) or type(method).__name__.removeprefix("Method_").upper()


def iters_of(query):
    """`/compute`'s iteration count from its query; None when it is not an integer in 0..=MAX_ITERS."""
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key == "iters":
            if not re.fullmatch(r"\+?[0-9]{1,10}", value):
                return None
            iters = int(value)
            return iters if iters <= MAX_ITERS else None
    return DEFAULT_ITERS


def chained_sha256_hex(iters):
    state = SEED
    for _ in range(iters):
        state = hashlib.sha256(state).digest()
    return state.hex()


def read_all(body):
    """Every byte of an incoming body, the body then finished (its trailers dropped)."""
    chunks = []
    with body.stream() as stream:
        while True:
            try:
                chunks.append(stream.blocking_read(CHUNK))
            except Err as e:
                if isinstance(e.value, StreamError_Closed):
                    break
                raise
    IncomingBody.finish(body).__exit__(None, None, None)
    return b"".join(chunks)


def upstream():
    for key, value in get_environment():
        if key == "WASMLAB_UPSTREAM":
            return value.rstrip("/")
    return ""


def exchange(method, target):
    """The upstream's answer to `method target`: its body on a 2xx, else an error naming the status."""
    base = upstream()
    if not base:
        raise RuntimeError("no upstream configured (the environment has no WASMLAB_UPSTREAM)")
    scheme, _, authority = base.partition("://")
    request = OutgoingRequest(Fields())
    request.set_method(method)
    request.set_scheme(Scheme_Https() if scheme == "https" else Scheme_Http())
    request.set_authority(authority)
    request.set_path_with_query(target)
    body = request.body()
    future = outgoing_handler.handle(request, None)
    OutgoingBody.finish(body, None)
    with future:
        while (answer := future.get()) is None:
            with future.subscribe() as ready:
                ready.block()
    if isinstance(answer, Err):
        raise RuntimeError("the response was already taken")
    if isinstance(answer.value, Err):
        raise RuntimeError(f"{answer.value.value}")
    with answer.value.value as response:
        status = response.status()
        data = read_all(response.consume())
    if not 200 <= status < 300:
        raise RuntimeError(f"upstream answered {status}")
    return data


def respond(out, status, content_type, body, headers=()):
    fields = Fields.from_list([("content-type", content_type), *headers])
    response = OutgoingResponse(fields)
    response.set_status_code(status)
    outgoing = response.body()
    ResponseOutparam.set(out, Ok(response))
    with outgoing.write() as stream:
        for i in range(0, len(body), 4096):
            stream.blocking_write_and_flush(body[i : i + 4096])
    OutgoingBody.finish(outgoing, None)


def route(request):
    """(status, content type, body, headers) of wasmlab's answer to `request`."""
    target = request.path_with_query() or "/"
    path, _, query = target.partition("?")
    allowed = ROUTES.get(path)
    if allowed is None:
        return 404, TEXT, b"not found", ()
    if method_name(request.method()) != allowed:
        return 405, TEXT, b"method not allowed", (("allow", allowed.encode()),)
    if path == "/":
        return 200, TEXT, b"hello", ()
    if path == "/compute":
        iters = iters_of(query)
        if iters is None:
            return 400, TEXT, ITERS_ERROR.encode(), ()
        return 200, TEXT, chained_sha256_hex(iters).encode(), ()
    if path == "/state":
        try:
            value = exchange(Method_Post(), COUNTER_PATH).decode().strip()
            if not value.isdigit():
                raise RuntimeError(f"the upstream's counter answered {value!r}")
            return 200, TEXT, value.encode(), ()
        except Exception as e:
            return 502, TEXT, f"counter error: {e}".encode(), ()
    if path == "/proxy":
        try:
            return 200, BYTES, exchange(Method_Get(), target), ()
        except Exception as e:
            return 502, TEXT, f"upstream error: {e}".encode(), ()
    # /echo
    return 200, BYTES, read_all(request.consume()), ()


class IncomingHandler(exports.IncomingHandler):
    def handle(self, request: IncomingRequest, response_out: ResponseOutparam) -> None:
        with request:
            status, content_type, body, headers = route(request)
        respond(response_out, status, content_type, body, headers)
