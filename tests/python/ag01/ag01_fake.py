"""The course fake model as the ag01 catalog reaches it: by its URL, scripted over HTTP.

`course check` names the run's fake model in COURSE_FAKE_MODEL_URL, as it does for the Go and TypeScript
catalogs; nothing here imports the harness. Tests of this catalog may run at once in several
processes, so each process asks that fake model once for one of its own (POST /_fake/fresh: its own
port, script, recorded requests and ids) and, like the Go and TypeScript catalogs, resets it before
each test (POST /_fake/reset). Under `course check` each worker hosts the run's fake model itself.

Replies are the JSON form the fake model reads (POST /_fake/script); the builders below write the
replies this catalog scripts. The control surface and the JSON form are the fake model's public face
(CONTRIBUTING.md, "The fake model").
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

URL_VAR = "COURSE_FAKE_MODEL_URL"
CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Recorded:
    """One request the fake model received; header names are lower case (a header sent twice shows its
    last value in `headers`, every value in `header_values`)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    header_values: dict[str, list[str]] = field(default_factory=dict)


class _ClientGone:
    """Whether a client left a stream before it was complete: `is_set()` now, `wait(timeout)` until it
    happens (the fake model waits on the event; nothing here sleeps)."""

    def __init__(self, fake: FakeModel) -> None:
        self._fake = fake

    def is_set(self) -> bool:
        return bool(self._fake.state()["client_gone"])

    def wait(self, timeout: float) -> bool:
        return bool(self._fake.control("POST", "wait", {"for": "client_gone", "timeout": timeout})["client_gone"])


class FakeModel:
    """A fake model of this test's own, made by the run's fake model (see the module's text)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.client_gone = _ClientGone(self)

    @classmethod
    def of_this_process(cls) -> FakeModel:
        """This process's own fake model, made by the run's on first use; it lives as long as the
        process (or the run's fake model)."""
        key = (os.getpid(), run_url())
        if key not in _OWN:
            _OWN[key] = cls(control(run_url(), "POST", "fresh")["base_url"])
        return _OWN[key]

    def control(self, method: str, what: str, body: Any = None) -> Any:
        return control(self.base_url, method, what, body)

    def script(self, *replies: dict[str, Any]) -> None:
        """Queue replies; each API request the fake model accepts takes the next one, in order."""
        self.control("POST", "script", {"replies": list(replies)})

    def clear(self) -> None:
        """Forget the queued replies, the recorded requests and client_gone (issued call ids are kept)."""
        self.control("POST", "reset")

    def state(self) -> dict[str, Any]:
        return self.control("GET", "state")

    @property
    def requests(self) -> list[Recorded]:
        """The API requests received so far, in arrival order."""
        return [Recorded(r["method"], r["path"], r["headers"], r["body"], r.get("header_values", {}))
                for r in self.state()["requests"]]

    @property
    def issued_call_ids(self) -> set[str]:
        """Every tool-call id this fake model has sent."""
        return set(self.state()["issued_call_ids"])


_OWN: dict[tuple[int, str], FakeModel] = {}  # by process and run: see FakeModel.of_this_process


def run_url() -> str:
    url = os.environ.get(URL_VAR, "")
    if not url:
        raise RuntimeError(f"{URL_VAR} is not set: run the catalog with `course check`, or start `course fake-model` "
                           "and set it to the URL it prints")
    return url


def control(base_url: str, method: str, what: str, body: Any = None) -> Any:
    """One request to a fake model's control surface (/_fake/WHAT beside /v1); its JSON answer. The
    connection is kept for the next request to the same fake model (a test makes dozens)."""
    parts = urlsplit(base_url)
    where = (parts.hostname or "127.0.0.1", parts.port or 80)
    payload = b"" if body is None else json.dumps(body).encode("utf-8")
    while True:
        conn, kept = _connection(where)
        try:
            status, raw = conn.exchange(method, f"/_fake/{what}", payload)
        except ConnectionError:
            conn.close()
            if kept:
                continue  # the fake model closed a connection left idle: again, on another
            raise
        except BaseException:
            conn.close()
            raise
        _give_back(where, conn)
        break
    if status != 200:
        raise RuntimeError(f"the fake model's /_fake/{what}: HTTP {status}: {raw.decode('utf-8', 'replace')}")
    return json.loads(raw) if raw else None


class _ControlConnection:
    """HTTP/1.1 for the control surface's small JSON requests, kept alive between them. It reads only
    what the fake model sends there (a Content-Length body); http.client would do, at twice the cost
    per request, and a test makes dozens."""

    def __init__(self, where: tuple[str, int]) -> None:
        self._sock = socket.create_connection(where, timeout=30)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._host = f"{where[0]}:{where[1]}".encode("ascii")
        self._pending = b""

    def exchange(self, method: str, target: str, body: bytes) -> tuple[int, bytes]:
        self._sock.sendall(b"%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                           % (method.encode("ascii"), target.encode("ascii"), self._host, len(body), body))
        while b"\r\n\r\n" not in self._pending:
            self._receive()
        head, _, self._pending = self._pending.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = next((int(value) for name, _, value in (line.partition(b":") for line in lines[1:])
                       if name.strip().lower() == b"content-length"), 0)
        while len(self._pending) < length:
            self._receive()
        answer, self._pending = self._pending[:length], self._pending[length:]
        return status, answer

    def _receive(self) -> None:
        data = self._sock.recv(65536)
        if not data:
            raise ConnectionResetError("the fake model closed the connection")
        self._pending += data

    def close(self) -> None:
        self._sock.close()


# Idle control connections, by fake model (host, port): each request takes one (or opens one) and
# gives it back, so requests from several threads of a test never share a connection at once.
_idle: dict[tuple[str, int], list[_ControlConnection]] = {}
_idle_lock = threading.Lock()


def _connection(where: tuple[str, int]) -> tuple[_ControlConnection, bool]:
    """An idle connection to `where` and True, else a new one and False."""
    with _idle_lock:
        idle = _idle.get(where)
        if idle:
            return idle.pop(), True
    return _ControlConnection(where), False


def _give_back(where: tuple[str, int], conn: _ControlConnection) -> None:
    with _idle_lock:
        _idle.setdefault(where, []).append(conn)


# ---- replies, in the JSON form the fake model reads ---------------------------------------------------

# What the real API says for a status when the test names no message (the fake model's own defaults).
_MESSAGES = {
    400: "The fake model was scripted to reject this request.",
    429: "Rate limit reached for requests. Please try again later.",
    500: "The server had an error while processing your request. Sorry about that!",
    503: "The engine is currently overloaded, please try again later.",
}
_SERVER_ERROR = "The server had an error while processing your request."


def text(*chunks: str, usage: tuple[int, int] | None = None) -> dict[str, Any]:
    """A text answer streamed as these chunks (role chunk first, then finish, usage, end marker)."""
    return {"kind": "turn", "text": list(chunks), "finish_reason": "stop", "usage": None if usage is None else list(usage)}


def http_error(status: int, type: str = "", message: str = "", *, code: str | None = None,
               retry_after: float | int | str | None = None) -> dict[str, Any]:
    """An HTTP error with the real API's error body, and Retry-After when given (a number is sent as
    its shortest text: 3, 0.2)."""
    if not type:
        type = "rate_limit_exceeded" if status == 429 else ("server_error" if status >= 500 else "invalid_request_error")
    if retry_after is not None and not isinstance(retry_after, str):
        retry_after = str(int(retry_after)) if float(retry_after).is_integer() else repr(float(retry_after))
    return {"kind": "http_error", "status": status, "type": type, "message": message or _MESSAGES.get(status, f"The fake model answered HTTP {status}."),
            "code": code, "retry_after": retry_after}


def raw(body: str, *, status: int = 200, content_type: str = "text/event-stream; charset=utf-8") -> dict[str, Any]:
    """Exactly these body bytes (UTF-8), correctly framed."""
    return {"kind": "raw", "body": body, "status": status, "content_type": content_type}


def _cut(chunks: tuple[str, ...], ending: str, *, last: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"kind": "turn", "text": [*chunks, *last], "cut_after": 1 + len(chunks), "ending": ending}


def reset_after(*chunks: str) -> dict[str, Any]:
    """The role chunk and one text event per chunk, then a TCP reset."""
    return _cut(chunks, "reset")


def cut_mid_chunk(*chunks: str) -> dict[str, Any]:
    """The role chunk and one text event per chunk, then the connection closed in the middle of an HTTP chunk."""
    return _cut(chunks, "cut_mid_chunk", last=("never whole",))


def truncated(*chunks: str) -> dict[str, Any]:
    """The role chunk and one text event per chunk, then half an event and a clean end of the body."""
    return _cut(chunks, "truncate", last=("never whole",))


def error_event(type: str = "server_error", message: str = _SERVER_ERROR, *, after: tuple[str, ...] | list[str] = ()) -> dict[str, Any]:
    """The role chunk and one text event per piece of `after`, then an in-band error: data: {"error": {...}}."""
    return {**_cut(tuple(after), "error"), "error": {"message": message, "type": type, "param": None, "code": None}}


def slow(interval: float, duration: float) -> dict[str, Any]:
    """One small text chunk every `interval` seconds for up to `duration` seconds; stops when the client goes."""
    return {"kind": "slow", "interval": interval, "duration": duration}
