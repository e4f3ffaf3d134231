#!/usr/bin/env python3
"""start-cost.py N CMD...: what a server's start costs, N times: spawn -> first 200 of GET / (wall),
and the server's own CPU time until then (user + system, from wait4 after killing it right away).

CMD must print `listening on http://ADDR` as its first line (wasmlab's gateways do with --port 0).
CPU time is steadier than wall time on a busy machine: use it to compare two builds or settings,
interleaved, e.g.
  for i in 1 2 3; do for b in A B; do scripts/start-cost.py 30 $b --port 0; done; done
wasmlab run's cold start (docs/method.md) is the figure to report; this one says where it went."""
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

if len(sys.argv) < 3 or not sys.argv[1].isdigit():
    sys.exit(__doc__)
n, cmd = int(sys.argv[1]), sys.argv[2:]
wall, cpu = [], []
for _ in range(n):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    m = re.search(r"listening on http://(\S+)", p.stdout.readline().decode())
    if not m:
        p.kill()
        sys.exit(f"start-cost: {cmd[0]} did not print `listening on http://ADDR`")
    host, port = m.group(1).rsplit(":", 1)
    with socket.create_connection((host.strip("[]"), int(port))) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    t1 = time.perf_counter()
    if not data.startswith(b"HTTP/1.1 200"):
        sys.exit(f"start-cost: not a 200: {data[:80]!r}")
    os.kill(p.pid, signal.SIGKILL)
    _, _, usage = os.wait4(p.pid, 0)
    wall.append((t1 - t0) * 1000)
    cpu.append((usage.ru_utime + usage.ru_stime) * 1000)
print(f"first 200 p50 {statistics.median(wall):.2f} ms (min {min(wall):.2f}), "
      f"CPU p50 {statistics.median(cpu):.2f} ms, n={n} :: {' '.join(cmd)}")
