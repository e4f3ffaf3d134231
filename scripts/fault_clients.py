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


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
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
    args = p.parse_args()
    {
        "malformed": malformed,
        "big-header": big_header,
        "slow-heads": lambda a: slow(a, True),
        "slow-bodies": lambda a: slow(a, False),
        "framing": framing,
        "read-back": read_back,
        "storm": storm,
    }[args.fault](args)


if __name__ == "__main__":
    main()
