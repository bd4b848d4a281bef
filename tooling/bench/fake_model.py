"""Benchmark: the fake model under load, side by side with its predecessor.

    python tooling/bench/fake_model.py [--requests 500] [--streams 50] [--churn 1000]

first-event  time from sending a streamed request to holding its first event, on one keep-alive
             connection, N sequential requests (target: p50 under 2 ms). Measured for this fake and,
             side by side, for the single-file fake it replaced (read from git history, commit a39aa1b,
             when available): with a raw socket client and with the official openai SDK's sync and
             async clients (bench extra). The SDK figures include the SDK's own work per request.
concurrent   S streams at once, each on its own connection: all must complete; p50 and p99 of the
             time to the last byte.
idle         after C more requests (keep-alive and one-shot connections, half of them streamed), the
             server process's open file descriptors and threads are back to their idle count.

The server runs in a child process, as it does for a learner (`course fake-model`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
REQUEST = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
           b"Content-Length: %d\r\n\r\n%s" % (len(BODY), BODY))
PREDECESSOR = "a39aa1b"


def predecessor_source() -> bytes | None:
    """The single-file fake model this package replaced, from git history (None if unavailable)."""
    done = subprocess.run(["git", "-C", str(REPO), "show", f"{PREDECESSOR}:course/fake_model.py"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


# The server runs in a process of its own, as it does for a learner: a client in the same process
# would share its interpreter lock and measure the lock, not the server.
SERVE = """
import sys
sys.path.insert(0, sys.argv[1])
import {module} as fake
with fake.FakeModel() as fm:
    fm.script(*[fake.text(*[f"tok{{i}} " for i in range(50)]) for _ in range(int(sys.argv[2]))])
    print(fm.port, flush=True)
    sys.stdin.read()
"""


class Served:
    """A fake model in a child process: its port and pid; stopped by closing its stdin."""

    def __init__(self, source: bytes | None = None, scripted: int = 0) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="bench-fake-")
        if source is None:
            root, module = str(REPO), "course.fake_model"
        else:
            root, module = self._folder.name, "old_fake_model"
            (Path(root) / "old_fake_model.py").write_bytes(source)
        self.process = subprocess.Popen([sys.executable, "-c", SERVE.format(module=module), root, str(scripted)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def resources(self) -> tuple[int, int]:
        """The server process's open file descriptors and threads."""
        fds = len(os.listdir(f"/proc/{self.process.pid}/fd"))
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        threads = int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))
        return fds, threads

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.stdin.close()
        self.process.wait(30)
        self.process.stdout.close()
        self._folder.cleanup()


def read_response(sock: socket.socket, first_event_at: list[float]) -> None:
    """Read one chunked streamed answer to its end; note when the first event was complete."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    body = buf[buf.index(b"\r\n\r\n") + 4 :]
    noted = False
    while not body.endswith(b"0\r\n\r\n"):
        if not noted and b"\n\n" in body:
            first_event_at.append(time.perf_counter())
            noted = True
        body += sock.recv(65536)
    if not noted:
        first_event_at.append(time.perf_counter())


def first_event_raw(port: int, n: int) -> list[float]:
    times: list[float] = []
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for _ in range(n):
            marks: list[float] = []
            started = time.perf_counter()
            sock.sendall(REQUEST)
            read_response(sock, marks)
            times.append(marks[0] - started)
    return times


def first_event_sdk(base_url: str, n: int) -> list[float] | None:
    try:
        import openai
    except ImportError:
        return None
    client = openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    times = []
    try:
        for _ in range(n):
            started = time.perf_counter()
            stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
            first = None
            for _chunk in stream:
                if first is None:
                    first = time.perf_counter() - started
            times.append(first)
    finally:
        client.close()
    return times


def first_event_sdk_async(base_url: str, n: int) -> list[float] | None:
    """The same with the SDK's async client (the one that showed the delayed-ACK stall first)."""
    try:
        import asyncio

        import openai
    except ImportError:
        return None

    async def run() -> list[float]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
        times = []
        try:
            for _ in range(n):
                started = time.perf_counter()
                stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
                first = None
                async for _chunk in stream:
                    if first is None:
                        first = time.perf_counter() - started
                times.append(first)
        finally:
            await client.close()
        return times

    return asyncio.run(run())


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def line(label: str, times: list[float] | None) -> None:
    if not times:
        print(f"  {label:44} (not measured)")
        return
    print(f"  {label:44} p50 {statistics.median(times) * 1e3:7.2f} ms   p99 {pct(times, 0.99) * 1e3:7.2f} ms   (n={len(times)})")


def bench_first_event(n: int) -> None:
    print(f"first-event: {n} sequential streamed requests on one keep-alive connection (target p50 < 2 ms)")
    old = predecessor_source()
    with Served() as fm:
        first_event_raw(fm.port, 20)  # warm up
        line("this fake, raw socket client", first_event_raw(fm.port, n))
        line("this fake, openai SDK", first_event_sdk(fm.base_url, n))
        line("this fake, openai SDK (async client)", first_event_sdk_async(fm.base_url, n))
    if old is None:
        print("  (predecessor not available from git history)")
        return
    with Served(old) as fm:
        first_event_raw(fm.port, 5)
        line(f"predecessor ({PREDECESSOR}), raw socket client", first_event_raw(fm.port, n))
        line(f"predecessor ({PREDECESSOR}), openai SDK", first_event_sdk(fm.base_url, n))
        line(f"predecessor ({PREDECESSOR}), openai SDK (async client)", first_event_sdk_async(fm.base_url, n))


def bench_concurrent(streams: int) -> None:
    print(f"concurrent: {streams} streams at once, each on its own connection")
    with Served(scripted=streams) as fm:
        durations: list[float] = []
        failures: list[str] = []
        gate = threading.Barrier(streams)

        def one() -> None:
            try:
                with socket.create_connection(("127.0.0.1", fm.port), timeout=60) as sock:
                    gate.wait()
                    started = time.perf_counter()
                    sock.sendall(REQUEST)
                    read_response(sock, [])
                    durations.append(time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - counted and reported
                failures.append(repr(exc))

        threads = [threading.Thread(target=one) for _ in range(streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print(f"  completed {len(durations)} of {streams} ({len(failures)} failed{': ' + failures[0] if failures else ''})")
    line("time to the last byte", durations)


def bench_idle(total: int) -> None:
    print(f"idle: the server process's resources after {total} requests, every client closed")
    with Served() as fm:
        time.sleep(0.2)
        fds, threads = fm.resources()
        plain = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(BODY.replace(b', "stream": true', b"")), BODY.replace(b', "stream": true', b"")))
        done = 0
        while done < total:
            with socket.create_connection(("127.0.0.1", fm.port), timeout=30) as sock:  # 10 requests per keep-alive connection
                for i in range(10):
                    if i % 2:
                        sock.sendall(plain)
                        buf = bytearray()
                        while b"\r\n\r\n" not in buf:
                            buf += sock.recv(65536)
                        head, _, body = bytes(buf).partition(b"\r\n\r\n")
                        length = int(next(h.split(b":")[1] for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")))
                        while len(body) < length:
                            body += sock.recv(65536)
                    else:
                        sock.sendall(REQUEST)
                        read_response(sock, [])
                    done += 1
        deadline = time.monotonic() + 10
        while fm.resources() != (fds, threads) and time.monotonic() < deadline:
            time.sleep(0.01)
        after_fds, after_threads = fm.resources()
        print(f"  file descriptors: idle {fds}, after {after_fds};  threads: idle {threads}, after {after_threads}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--churn", type=int, default=1000)
    args = parser.parse_args()
    bench_first_event(args.requests)
    bench_concurrent(args.streams)
    bench_idle(args.churn)


if __name__ == "__main__":
    main()
