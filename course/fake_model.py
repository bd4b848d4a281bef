"""The course fake model: an OpenAI-compatible chat-completions server on the loopback interface.

It answers ``POST {base_url}/chat/completions`` (``base_url`` is ``http://127.0.0.1:PORT/v1``) the way an
OpenAI-compatible engine does, streamed (``"stream": true``, server-sent events) or not, and records every
request it receives. Tests script its replies; with nothing scripted it plays "faketool":

* when the last message is a tool message whose ``tool_call_id`` names a call this fake issued, it answers
  with text that quotes the tool's result;
* otherwise, when the request offers tools, it asks for one tool call, ``get_weather`` with
  ``{"city": "Paris"}``, whose arguments arrive split in two halves across two chunks;
* a request without tools gets a short text answer.

Usage in a test::

    from course import fake_model

    with fake_model.FakeModel() as fm:
        fm.script(fake_model.http_error(503), fake_model.text("Hel", "lo"))
        ...  # point the client at fm.base_url
        assert len(fm.requests) == 2

Reply factories (each returns a :class:`Reply`): :func:`text`, :func:`tool_call`, :func:`http_error`,
:func:`reset_after`, :func:`no_done`, :func:`error_event`, :func:`slow`, :func:`raw`.

From a shell: ``python -m course.fake_model --port 8080`` (the CLI's ``course fake-model``) serves in the
foreground until Ctrl-C. Only the standard library is used, and the server binds to loopback addresses
only: asking for any other host is a ValueError.
"""

from __future__ import annotations

import json
import selectors
import socket
import struct
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Sequence

__all__ = [
    "FakeModel",
    "RecordedRequest",
    "Reply",
    "Turn",
    "ScriptedCall",
    "HTTPErrorReply",
    "SlowStream",
    "RawReply",
    "text",
    "tool_call",
    "http_error",
    "reset_after",
    "no_done",
    "error_event",
    "slow",
    "raw",
    "serve",
    "main",
]

CHAT_PATH = "/v1/chat/completions"
CREATED = 1_700_000_000  # a fixed "created" timestamp: replies are byte-for-byte reproducible

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_HEAD = 64 * 1024
_MAX_BODY = 16 * 1024 * 1024
_IDLE_TIMEOUT = 60.0  # an idle keep-alive connection is closed after this many seconds


# --------------------------------------------------------------------------------------------------
# Recorded requests


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str  # the request target as sent, query string included
    headers: dict[str, str]  # names lowercased; a repeated header keeps its last value
    body: Any  # the parsed JSON body; None when the body is empty or not JSON
    raw_body: bytes = b""


# --------------------------------------------------------------------------------------------------
# Replies


class Reply:
    """One scripted answer, consumed by one chat-completions request. Build replies with the factories."""

    def _serve(self, ex: _Exchange) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class ScriptedCall:
    """A tool call inside a :class:`Turn`: its arguments are sent as the given parts, one chunk each."""

    id: str
    name: str
    argument_parts: tuple[str, ...] = ()


Ending = Literal["done", "eof", "reset", "error"]


@dataclass(frozen=True)
class Turn(Reply):
    """An assistant turn: text and/or tool calls, streamed as chat.completion.chunk events.

    The full event sequence is: a role chunk (``content: ""``), one chunk per text piece, for each call a
    chunk with its id and name (``arguments: ""``) and one chunk per argument part, a finish chunk, and a
    usage chunk (only when the request asked for ``stream_options.include_usage``, as OpenAI does).
    ``cut_after`` keeps only the first N events of that sequence; ``ending`` says what follows:
    ``"done"`` ``data: [DONE]`` and a clean end, ``"eof"`` a clean end without ``[DONE]``, ``"reset"`` a
    TCP reset (RST, no clean end), ``"error"`` an in-band ``data: {"error": ...}`` event then a clean end.
    A non-streaming request gets the same turn as one ``chat.completion`` JSON object (endings ignored).
    """

    text: tuple[str, ...] = ()
    calls: tuple[ScriptedCall, ...] = ()
    finish_reason: str = ""  # "" means "tool_calls" when there are calls, else "stop"
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); None: estimated
    cut_after: int | None = None
    ending: Ending = "done"
    error: dict[str, Any] | None = None  # the object under "error" for ending="error"

    def _finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.calls else "stop")

    def _usage(self, body: dict[str, Any]) -> dict[str, int]:
        if self.usage is not None:
            prompt, completion = self.usage
        else:
            # A deterministic estimate: about four characters a token.
            prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
            completion = max(1, len(self.text) + sum(len(c.argument_parts) for c in self.calls))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _events(self, ex: _Exchange) -> list[str]:
        events = [ex.chunk({"role": "assistant", "content": ""})]
        events += [ex.chunk({"content": piece}) for piece in self.text]
        for index, call in enumerate(self.calls):
            head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
            events.append(ex.chunk({"tool_calls": [head]}))
            for part in call.argument_parts:
                events.append(ex.chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
        events.append(ex.chunk({}, finish_reason=self._finish()))
        if ex.include_usage:
            events.append(ex.usage_chunk(self._usage(ex.body)))
        if self.cut_after is not None:
            events = events[: self.cut_after]
        return events

    def _serve(self, ex: _Exchange) -> None:
        ex.model._note_calls(c.id for c in self.calls)
        if not ex.stream:
            ex.send_json(200, self._completion(ex))
            return
        ex.start_stream()
        for data in self._events(ex):
            if not ex.send_event(data):
                return
        if self.ending == "done":
            ex.send_event("[DONE]")
        elif self.ending == "error":
            ex.send_event(json.dumps({"error": self.error or {}}, separators=(",", ":")))
        elif self.ending == "reset":
            ex.reset()
            return
        ex.end_stream()

    def _completion(self, ex: _Exchange) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) if self.text or not self.calls else None}
        if self.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": "".join(c.argument_parts)}}
                for c in self.calls
            ]
        return {
            "id": ex.completion_id,
            "object": "chat.completion",
            "created": CREATED,
            "model": ex.model_name,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish()}],
            "usage": self._usage(ex.body),
        }


@dataclass(frozen=True)
class HTTPErrorReply(Reply):
    """A non-2xx answer with an OpenAI-style JSON error body and, optionally, a Retry-After header."""

    status: int
    type: str = ""
    message: str = ""
    code: str | None = None
    retry_after: str | None = None  # the header's exact text (seconds, or anything, to test parsing)

    def _serve(self, ex: _Exchange) -> None:
        headers = [("Retry-After", self.retry_after)] if self.retry_after is not None else []
        body = {"error": {"message": self.message, "type": self.type, "param": None, "code": self.code}}
        ex.send_json(self.status, body, headers)


@dataclass(frozen=True)
class SlowStream(Reply):
    """A stream that sends one small text chunk every ``interval`` seconds for up to ``duration`` seconds.

    It watches its connection between chunks: when the client goes away it sets
    ``FakeModel.client_gone`` and stops. Left alone it ends by itself (finish chunk, ``[DONE]``) after
    ``duration`` seconds, or at once when the fake model stops.
    """

    interval: float = 0.02
    duration: float = 3.0

    def _serve(self, ex: _Exchange) -> None:
        ex.start_stream()
        ex.send_event(ex.chunk({"role": "assistant", "content": ""}))
        deadline = time.monotonic() + self.duration
        n = 0
        while time.monotonic() < deadline:
            if not ex.send_event(ex.chunk({"content": f"tick{n} "})):
                return
            n += 1
            if ex.wait_client_gone(self.interval):
                if not ex.model.stopping:
                    ex.model.client_gone.set()
                return
        ex.send_event(ex.chunk({}, finish_reason="length"))
        ex.send_event("[DONE]")
        ex.end_stream()


@dataclass(frozen=True)
class RawReply(Reply):
    """Exact body bytes (e.g. a recorded stream), sent in pieces of ``piece`` bytes as separate writes."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream; charset=utf-8"
    piece: int = 0  # 0: the whole body in one write

    def _serve(self, ex: _Exchange) -> None:
        ex.start_stream(self.status, self.content_type)
        step = self.piece or max(1, len(self.body))
        for start in range(0, len(self.body), step):
            if not ex.send_raw(self.body[start : start + step]):
                return
        ex.end_stream()


# ---- factories -------------------------------------------------------------------------------------


def text(*chunks: str, finish_reason: str = "stop", usage: tuple[int, int] | None = None) -> Turn:
    """A text answer streamed as the given chunks (role chunk first, then finish, usage, ``[DONE]``)."""
    return Turn(text=tuple(chunks), finish_reason=finish_reason, usage=usage)


def tool_call(name: str, *argument_parts: str, call_id: str = "call_scripted_1", text: Sequence[str] = ()) -> Turn:
    """An answer asking for one tool call whose arguments arrive as the given parts (one chunk each)."""
    return Turn(text=tuple(text), calls=(ScriptedCall(call_id, name, tuple(argument_parts)),))


def http_error(
    status: int,
    type: str = "",
    message: str = "",
    *,
    code: str | None = None,
    retry_after: float | int | str | None = None,
) -> HTTPErrorReply:
    """An HTTP error: ``{"error": {"message", "type", "param", "code"}}``, optionally with Retry-After.

    ``type`` and ``message`` default to something plausible for the status.
    """
    if not type:
        type = "invalid_request_error" if status < 500 and status != 429 else ("rate_limit_exceeded" if status == 429 else "server_error")
    if not message:
        message = f"fake model: HTTP {status} {_REASONS.get(status, '')}".rstrip()
    if retry_after is None or isinstance(retry_after, str):
        header = retry_after
    else:
        header = str(int(retry_after)) if float(retry_after).is_integer() else repr(float(retry_after))
    return HTTPErrorReply(status, type, message, code, header)


def reset_after(*chunks: str) -> Turn:
    """The role chunk and one text event per chunk (``1 + len(chunks)`` events), then a TCP reset."""
    return Turn(text=tuple(chunks), cut_after=1 + len(chunks), ending="reset")


def no_done(*chunks: str) -> Turn:
    """A complete-looking text stream (finish and usage chunks included) that ends cleanly without [DONE]."""
    return Turn(text=tuple(chunks), ending="eof")


def error_event(
    type: str = "server_error",
    message: str = "The server had an error while processing your request.",
    *,
    code: str | None = None,
    after: Sequence[str] = (),
) -> Turn:
    """The role chunk and one text event per piece of ``after``, then ``data: {"error": {...}}``."""
    error = {"message": message, "type": type, "param": None, "code": code}
    return Turn(text=tuple(after), cut_after=1 + len(after), ending="error", error=error)


def slow(interval: float = 0.02, duration: float = 3.0) -> SlowStream:
    """A slow stream for cancellation tests: see :class:`SlowStream`."""
    return SlowStream(interval, duration)


def raw(body: bytes | str, *, status: int = 200, content_type: str = "text/event-stream; charset=utf-8", piece: int = 0) -> RawReply:
    """Exactly these body bytes (a str is UTF-8 encoded), HTTP-framed correctly."""
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    return RawReply(data, status, content_type, piece)


# --------------------------------------------------------------------------------------------------
# The server


class FakeModel:
    """An OpenAI-compatible chat-completions server on a loopback address, run in a background thread.

    ``FakeModel()`` binds 127.0.0.1 on an ephemeral port at construction; :meth:`start` (or ``with``)
    starts serving and :meth:`stop` stops promptly (active connections are shut down, threads joined).

    Attributes: ``base_url`` (``http://127.0.0.1:PORT/v1``), ``port``, ``requests`` (a snapshot list of
    :class:`RecordedRequest`), ``client_gone`` (a ``threading.Event`` set when a client left a stream
    before it was complete), ``issued_call_ids`` (every tool-call id this fake has sent).
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tool_name: str = "get_weather",
        tool_arguments: str = '{"city": "Paris"}',
        log: Callable[[str], None] | None = None,
    ) -> None:
        family = _loopback_family(host)
        self.host = "127.0.0.1" if host == "localhost" else host
        self.tool_name = tool_name
        self.tool_arguments = tool_arguments
        self.client_gone = threading.Event()
        self._log = log
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._script: deque[Reply] = deque()
        self._issued: set[str] = set()
        self._next_call = 0
        self._next_completion = 0
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._loop_thread: threading.Thread | None = None
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.bind((self.host, port))
            self._listener.listen(64)
        except BaseException:
            self._listener.close()
            raise
        self.port: int = self._listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()

    # ---- lifecycle -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self) -> FakeModel:
        """Start serving in a background thread (idempotent). Returns self."""
        if self._loop_thread is None:
            if self._stopping.is_set():
                raise RuntimeError("a stopped FakeModel cannot be restarted; create a new one")
            self._loop_thread = threading.Thread(target=self._accept_loop, name=f"fake-model:{self.port}", daemon=True)
            self._loop_thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop accepting, shut down open connections and join every thread (each wait bounded)."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._loop_thread is not None:
            self._loop_thread.join(timeout)
        with self._lock:
            conns = list(self._conns)
            threads = list(self._threads)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        for s in (self._listener, self._wake_r, self._wake_w):
            s.close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # ---- scripting and inspection ----------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queue replies; each chat-completions request consumes the next one, in order."""
        for r in replies:
            if not isinstance(r, Reply):
                raise TypeError(f"script() takes Reply objects (see the factories), got {r!r}")
        with self._lock:
            self._script.extend(replies)

    def clear(self) -> None:
        """Forget the queued replies, the recorded requests and ``client_gone`` (issued call ids are kept)."""
        with self._lock:
            self._script.clear()
            self._requests.clear()
        self.client_gone.clear()

    @property
    def pending(self) -> int:
        """How many scripted replies have not been consumed yet."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def issued_call_ids(self) -> set[str]:
        with self._lock:
            return set(self._issued)

    def _note_calls(self, ids: Any) -> None:
        with self._lock:
            self._issued.update(ids)

    # ---- internals -------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ, "accept")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while not self._stopping.is_set():
                for key, _ in sel.select():
                    if key.data == "wake" or self._stopping.is_set():
                        return
                    try:
                        conn, _addr = self._listener.accept()
                    except OSError:
                        continue
                    t = threading.Thread(target=self._handle, args=(conn,), name=f"fake-model-conn:{self.port}", daemon=True)
                    with self._lock:
                        self._conns.add(conn)
                        self._threads.add(t)
                    t.start()

    def _handle(self, conn: socket.socket) -> None:
        """Serve one connection: requests one after the other (HTTP/1.1 keep-alive) until either side closes."""
        try:
            conn.settimeout(_IDLE_TIMEOUT)
            reader = _RequestReader(conn)
            while not self._stopping.is_set():
                request = reader.next_request()
                if request is None:
                    return
                method, target, headers, raw_body = request
                if not self._dispatch(conn, method, target, headers, raw_body):
                    return
        except (OSError, ValueError):
            pass  # the client went away or sent garbage: nothing to answer
        finally:
            with self._lock:
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())
            try:
                conn.close()
            except OSError:
                pass

    def _dispatch(self, conn: socket.socket, method: str, target: str, headers: dict[str, str], raw_body: bytes) -> bool:
        """Answer one request; True when the connection may carry another one."""
        body: Any = None
        if raw_body:
            try:
                body = json.loads(raw_body)
            except ValueError:
                body = None
        with self._lock:
            self._requests.append(RecordedRequest(method, target, headers, body, raw_body))
        ex = _Exchange(self, conn, body if isinstance(body, dict) else {}, close=headers.get("connection", "").lower() == "close")
        path = target.split("?", 1)[0]
        if path != CHAT_PATH:
            self._say(f"{method} {target} -> 404")
            ex.send_json(404, _error_body("invalid_request_error", f"Unknown request URL: {method} {path}. This fake model serves POST {CHAT_PATH}.", "unknown_url"))
            return ex.reusable
        if method != "POST":
            self._say(f"{method} {target} -> 405")
            ex.send_json(405, _error_body("invalid_request_error", f"Method {method} not allowed: use POST {CHAT_PATH}.", "method_not_allowed"), [("Allow", "POST")])
            return ex.reusable
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._say(f"{method} {target} -> 400 (not a JSON object with a messages list)")
            ex.send_json(400, _error_body("invalid_request_error", "The body must be a JSON object with a 'messages' array.", "invalid_body"))
            return ex.reusable
        with self._lock:
            reply = self._script.popleft() if self._script else None
        what = type(reply).__name__ if reply is not None else "faketool"
        if reply is None:
            reply = self._faketool(body)
        self._say(f"{method} {target} stream={ex.stream} -> {what}")
        reply._serve(ex)
        return ex.reusable

    def _faketool(self, body: dict[str, Any]) -> Turn:
        messages = body.get("messages") or []
        last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
        with self._lock:
            answered = last.get("role") == "tool" and last.get("tool_call_id") in self._issued
            if not answered:
                self._next_call += 1
                call_id = f"call_fake_{self._next_call}"
        if answered:
            result = last.get("content")
            result_text = result if isinstance(result, str) else json.dumps(result)
            return Turn(text=("The tool", " returned: ", result_text))
        if not body.get("tools"):  # a model asks for tools only when it was offered some
            return Turn(text=("Hello", " from the", " course fake model."))
        half = len(self.tool_arguments) // 2
        parts = (self.tool_arguments[:half], self.tool_arguments[half:])
        return Turn(calls=(ScriptedCall(call_id, self.tool_name, parts),))

    def _next_completion_id(self) -> str:
        with self._lock:
            self._next_completion += 1
            return f"chatcmpl-fake-{self._next_completion}"

    def _say(self, line: str) -> None:
        if self._log is not None:
            self._log(line)


def _error_body(type_: str, message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _loopback_family(host: str) -> socket.AddressFamily:
    """The address family for host, which must be a loopback address (never anything else)."""
    if host == "localhost":
        return socket.AF_INET
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            packed = socket.inet_pton(family, host)
        except OSError:
            continue
        if (family == socket.AF_INET and packed[0] == 127) or (family == socket.AF_INET6 and packed == b"\0" * 15 + b"\1"):
            return family
        break
    raise ValueError(f"the fake model only listens on loopback addresses (127.0.0.0/8, ::1, localhost), not {host!r}")


class _Exchange:
    """One request/response on one connection: the writing primitives the replies use."""

    def __init__(self, model: FakeModel, conn: socket.socket, body: dict[str, Any], *, close: bool = False) -> None:
        self.model = model
        self.conn = conn
        self.body = body
        self.reusable = not close  # may the connection carry another request after this one
        self.stream = body.get("stream") is True
        options = body.get("stream_options")
        self.include_usage = isinstance(options, dict) and options.get("include_usage") is True
        self.model_name = body.get("model") if isinstance(body.get("model"), str) and body.get("model") else "course-fake-model"
        self.completion_id = model._next_completion_id()

    # ---- JSON chunks -----------------------------------------------------------------------------

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> str:
        return json.dumps(
            {
                "id": self.completion_id,
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": self.model_name,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def usage_chunk(self, usage: dict[str, int]) -> str:
        return json.dumps(
            {"id": self.completion_id, "object": "chat.completion.chunk", "created": CREATED, "model": self.model_name, "choices": [], "usage": usage},
            separators=(",", ":"),
        )

    # ---- wire ------------------------------------------------------------------------------------

    def send_json(self, status: int, obj: Any, headers: Sequence[tuple[str, str]] = ()) -> None:
        data = json.dumps(obj).encode("utf-8")
        head = _head(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers, *self._connection_header()])
        self.conn.sendall(head + data)
        if not self.reusable:
            self._half_close()

    def start_stream(self, status: int = 200, content_type: str = "text/event-stream; charset=utf-8") -> None:
        head = _head(
            status,
            [("Content-Type", content_type), ("Cache-Control", "no-cache"), ("Transfer-Encoding", "chunked"), *self._connection_header()],
        )
        self.conn.sendall(head)

    def send_raw(self, data: bytes) -> bool:
        """One HTTP chunk; False when the client is gone."""
        if not data:
            return True
        try:
            self.conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
            return True
        except OSError:  # the client is gone (a write after its close may still succeed once)
            self.reusable = False
            if not self.model.stopping:
                self.model.client_gone.set()
            return False

    def send_event(self, data: str) -> bool:
        return self.send_raw(f"data: {data}\n\n".encode("utf-8"))

    def end_stream(self) -> None:
        """The last (empty) chunk: a well-formed end of the body, whatever the events said."""
        try:
            self.conn.sendall(b"0\r\n\r\n")
        except OSError:
            self.reusable = False
        if not self.reusable:
            self._half_close()

    def _connection_header(self) -> list[tuple[str, str]]:
        return [] if self.reusable else [("Connection", "close")]

    def _half_close(self) -> None:
        try:
            self.conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def reset(self) -> None:
        """Abort the connection with a TCP RST, after what was sent has reached the client."""
        self.reusable = False
        _drain(self.conn, 0.5)
        try:
            self.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.conn.close()

    def wait_client_gone(self, timeout: float) -> bool:
        """Wait up to timeout for the client to close its side (or the fake to stop); True if it did."""
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(self.conn, selectors.EVENT_READ)
                if not sel.select(timeout):
                    return False
            gone = self.conn.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            gone = True
        if gone:
            self.reusable = False
        else:  # the client sent more bytes (a pipelined request): not a goodbye; just wait out the interval
            self.model._stopping.wait(timeout)
        return gone


def _head(status: int, headers: Sequence[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "Server: course-fake-model"]
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _drain(conn: socket.socket, timeout: float) -> None:
    """Wait (bounded) until the kernel has no unacknowledged bytes queued for sending (Linux only)."""
    try:
        import fcntl
        import termios

        request = termios.TIOCOUTQ
    except (ImportError, AttributeError):
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            (queued,) = struct.unpack("i", fcntl.ioctl(conn.fileno(), request, b"\0\0\0\0"))
        except OSError:
            return
        if queued == 0:
            return
        time.sleep(0.001)


class _RequestReader:
    """Reads HTTP/1.1 requests (Content-Length or chunked bodies) one after the other from a connection."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn
        self._buf = bytearray()

    def _fill(self) -> bool:
        data = self._conn.recv(65536)
        self._buf += data
        return bool(data)

    def _need(self, n: int) -> None:
        while len(self._buf) < n:
            if not self._fill():
                raise ValueError("connection closed inside a request")

    def _line(self) -> bytes:
        while (i := self._buf.find(b"\r\n")) < 0:
            if len(self._buf) > _MAX_HEAD:
                raise ValueError("line too long")
            if not self._fill():
                raise ValueError("connection closed inside a request")
        line = bytes(self._buf[:i])
        del self._buf[: i + 2]
        return line

    def next_request(self) -> tuple[str, str, dict[str, str], bytes] | None:
        """The next request, or None when the client closed the connection between requests."""
        while (end := self._buf.find(b"\r\n\r\n")) < 0:
            if len(self._buf) > _MAX_HEAD:
                raise ValueError("request head too large")
            if not self._fill():
                if self._buf.strip():
                    raise ValueError("connection closed inside a request head")
                return None
        head = bytes(self._buf[:end]).decode("latin-1").lstrip("\r\n")
        del self._buf[: end + 4]
        request_line, *header_lines = head.split("\r\n")
        parts = request_line.split(" ")
        if len(parts) != 3:
            raise ValueError(f"bad request line {request_line!r}")
        method, target, _version = parts
        headers: dict[str, str] = {}
        for line in header_lines:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        if headers.get("expect", "").lower() == "100-continue":
            self._conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while (size := int(self._line().split(b";")[0].strip() or b"0", 16)) > 0:
                if len(body) + size > _MAX_BODY:
                    raise ValueError("request body too large")
                self._need(size + 2)
                body += self._buf[:size]
                del self._buf[: size + 2]
            while self._line():  # trailer fields, up to the blank line
                pass
            return method, target, headers, bytes(body)
        length = int(headers.get("content-length", "0") or "0")
        if length > _MAX_BODY:
            raise ValueError("request body too large")
        self._need(length)
        body = bytes(self._buf[:length])
        del self._buf[:length]
        return method, target, headers, body


# --------------------------------------------------------------------------------------------------
# Command line


def serve(port: int = 0, host: str = "127.0.0.1", *, verbose: bool = True, out: Any = None) -> None:
    """Run a fake model in the foreground, printing its URL, until Ctrl-C."""
    out = out or sys.stdout

    def log(line: str) -> None:
        print(f"fake-model: {line}", file=sys.stderr, flush=True)

    with FakeModel(host, port, log=log if verbose else None) as fm:
        print(f"course fake model listening on {fm.base_url}  (POST {fm.base_url}/chat/completions; Ctrl-C to stop)", file=out, flush=True)
        print(
            f"try: curl -s {fm.base_url}/chat/completions -H 'Content-Type: application/json' "
            """-d '{"model": "fake", "messages": [{"role": "user", "content": "Weather in Paris?"}]}'""",
            file=out,
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopped", file=out, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m course.fake_model [--port N] [--host 127.0.0.1] [--quiet]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="course fake-model", description="Serve the course fake model (OpenAI-compatible) on loopback.")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default: 0, an ephemeral port)")
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address (default 127.0.0.1)")
    parser.add_argument("--quiet", action="store_true", help="do not log requests to stderr")
    args = parser.parse_args(argv)
    try:
        serve(args.port, args.host, verbose=not args.quiet)
    except (ValueError, OSError) as e:
        print(f"course fake-model: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
