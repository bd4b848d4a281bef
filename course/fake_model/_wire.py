"""The wire layer: a loopback listener, one thread per connection, HTTP/1.1 parsed and framed by h11.

h11 does the protocol (request parsing, keep-alive, chunked or close-delimited framing, HTTP/1.0 peers,
HEAD); this module owns the sockets, so a fault can still cut an answer at an exact byte, reset the
connection or trickle the head out a byte at a time. Everything above this layer sees one
:class:`Request` and writes through one :class:`Responder`; it never touches a socket or h11.

Malformed requests get 400, a head larger than :data:`MAX_HEAD` 431, a body larger than :data:`MAX_BODY`
413 (never read, and no ``100 Continue`` is sent for it). Every accepted socket has TCP_NODELAY: the
small writes of a stream must not wait for the client's delayed ACK.
"""

from __future__ import annotations

import email.utils
import json
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from typing import Callable

import h11

from course.fake_model._errors import error_body

MAX_HEAD = 64 * 1024  # request line and headers together
MAX_BODY = 16 * 1024 * 1024
IDLE_TIMEOUT = 60.0  # an idle keep-alive connection is closed after this many seconds
LINGER = 1.0  # after answering a request whose body we did not read, drain it this long before closing
SERVER_NAME = "course-fake-model"


@dataclass(frozen=True)
class Request:
    """One complete request as received."""

    method: str
    target: str  # as sent, query string included
    http_version: str
    headers: tuple[tuple[str, str], ...]  # names lowercased, in arrival order
    body: bytes

    @property
    def path(self) -> str:
        """The target's path: no query string, and no scheme and host for an absolute-form target."""
        target = self.target
        if not target.startswith("/") and "://" in target:
            target = "/" + target.split("://", 1)[1].partition("/")[2]
        return target.split("?", 1)[0]

    def header(self, name: str) -> str | None:
        """The last value of a header (case-insensitive name), or None."""
        name = name.lower()
        found = None
        for key, value in self.headers:
            if key == name:
                found = value
        return found


Handler = Callable[[Request, "Responder"], None]


class Responder:
    """The writing side of one exchange: whole answers, streamed bodies, and exact-byte faults.

    Writes report a client that went away by returning False (never by raising). After a fault
    (:meth:`cut`, :meth:`close`, :meth:`reset`) the connection is finished.
    """

    def __init__(self, sock: socket.socket, conn: h11.Connection, request: Request, stopping: threading.Event,
                 on_client_gone: Callable[[], None]) -> None:
        self._sock = sock
        self._conn = conn
        self._stopping = stopping
        self._on_client_gone = on_client_gone
        self.head_only = request.method == "HEAD"
        self.started = False
        self.finished = False  # the answer is complete, or the connection is done for
        self.broken = False  # the connection must not carry another request
        self._held = b""  # a head waiting for the first piece of the body

    # ---- whole answers ---------------------------------------------------------------------------

    def send(self, status: int, body: bytes, content_type: str, headers: tuple[tuple[str, str], ...] = ()) -> bool:
        """A complete answer with a Content-Length (HEAD gets the head only), in one write: a client
        waiting for it wakes once, not for the head and again for the body."""
        if not self.start(status, (("Content-Type", content_type), ("Content-Length", str(len(body))), *headers), hold=True):
            return False
        return self.write(body) and self.end()

    # ---- streamed answers ------------------------------------------------------------------------

    def start(self, status: int, headers: tuple[tuple[str, str], ...] = (), *, byte_delay: float = 0.0,
              hold: bool = False) -> bool:
        """Send the head. Without a Content-Length the body is chunked (close-delimited for HTTP/1.0).

        ``byte_delay`` > 0 sends the head one byte at a time with that pause between bytes (a slow head);
        ``hold`` keeps the head until the first write, so head and first event share one packet.
        """
        all_headers = [("Date", email.utils.formatdate(usegmt=True)), ("Server", SERVER_NAME), *headers]
        reason = _reason(status)
        head = self._conn.send(h11.Response(status_code=status, headers=all_headers, reason=reason))
        self.started = True
        if hold and byte_delay <= 0:
            self._held = head  # goes out with the first piece of the body: one packet, not two
            return True
        if byte_delay <= 0:
            return self._sendall(head)
        for i in range(len(head)):
            if not self._sendall(head[i : i + 1]) or (i + 1 < len(head) and not self.pause(byte_delay)):
                return False
        return True

    def write(self, data: bytes) -> bool:
        """One piece of the body (one HTTP chunk when chunked); False when the client is gone."""
        if self.head_only or not data:
            return not self.finished
        return self._sendall(self._conn.send(h11.Data(data=data)))

    def end(self) -> bool:
        """A well-formed end of the body."""
        ok = self._sendall(self._conn.send(h11.EndOfMessage()))
        self.finished = True
        if self._conn.our_state is h11.MUST_CLOSE:
            self.broken = True
        return ok

    # ---- faults ----------------------------------------------------------------------------------

    def cut(self, data: bytes, keep: int) -> None:
        """Frame ``data`` as one body piece but send only its first ``keep`` bytes, then close the connection.

        On a chunked body the chunk-size line announces all of ``data``: the client sees the connection
        end in the middle of a chunk.
        """
        if not self.head_only:
            framed = self._conn.send(h11.Data(data=data))
            prefix = 0 if framed == data else framed.index(b"\r\n") + 2  # the chunk-size line, if chunked
            self._sendall(framed[: prefix + keep])
        self.close()

    def close(self) -> None:
        """End the connection now with a clean TCP close (FIN), whatever the framing still owes."""
        self._flush()
        self.finished = self.broken = True
        _close_gently(self._sock, linger=0.0)

    def reset(self) -> None:
        """Abort the connection with a TCP RST, after what was sent so far has reached the client."""
        self._flush()
        self.finished = self.broken = True
        _drain_outgoing(self._sock, 0.5)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        try:
            self._sock.close()
        except OSError:
            pass

    # ---- time --------------------------------------------------------------------------------------

    def pause(self, seconds: float) -> bool:
        """Send nothing for ``seconds``; False when the server is stopping (the answer should give up)."""
        return not self._stopping.wait(seconds) if seconds > 0 else not self._stopping.is_set()

    def client_gone(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the client to close its side; True if it did (or the server stops)."""
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(self._sock, selectors.EVENT_READ)
                if not sel.select(timeout):
                    return False
            gone = self._sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            gone = True
        if gone:
            self.broken = True
            if not self._stopping.is_set():
                self._on_client_gone()
        else:  # the client sent more bytes (a pipelined request), not a goodbye: just wait out the interval
            self._stopping.wait(timeout)
        return gone

    def _flush(self) -> None:
        if self._held:
            self._sendall(b"")

    def _sendall(self, data: bytes) -> bool:
        if self.broken and self.finished:
            return False
        if self._held:
            data, self._held = self._held + data, b""
        if not data:  # the end of a body with a Content-Length: nothing to send
            return True
        try:
            self._sock.sendall(data)
            return True
        except OSError:  # the client is gone (a write after its close may still succeed once)
            self.finished = self.broken = True
            if not self._stopping.is_set():
                self._on_client_gone()
            return False


def _reason(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode("ascii")
    except ValueError:
        return b""


class Server:
    """Accepts connections on a loopback address and serves each in its own thread until stopped.

    ``on_client_gone`` is asked as each request starts, and gives what its answer calls if the client
    leaves before the end (the state decides whether that still counts when it happens)."""

    def __init__(self, host: str, port: int, handler: Handler, *,
                 on_client_gone: Callable[[], Callable[[], None]] = lambda: lambda: None) -> None:
        self._handler = handler
        self._on_client_gone = on_client_gone
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._accept_thread: threading.Thread | None = None
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._listener.bind((host, port))
            self._listener.listen(128)
        except BaseException:
            self._listener.close()
            raise
        self.port: int = self._listener.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()

    def start(self) -> None:
        if self._accept_thread is None:
            self._accept_thread = threading.Thread(target=self._accept_loop, name=f"fake-model:{self.port}", daemon=True)
            self._accept_thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop accepting, shut every open connection down and join every thread (each wait bounded)."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        if self._accept_thread is not None:
            self._accept_thread.join(timeout)
        with self._lock:
            conns, threads = list(self._conns), list(self._threads)
        for sock in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        for s in (self._listener, self._wake_r, self._wake_w):
            s.close()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ, "accept")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while not self.stopping.is_set():
                for key, _ in sel.select():
                    if key.data == "wake" or self.stopping.is_set():
                        return
                    try:
                        sock, _addr = self._listener.accept()
                    except OSError:
                        continue
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    t = threading.Thread(target=self._serve_connection, args=(sock,), name=f"fake-model-conn:{self.port}", daemon=True)
                    with self._lock:
                        self._conns.add(sock)
                        self._threads.add(t)
                    t.start()

    def _serve_connection(self, sock: socket.socket) -> None:
        try:
            sock.settimeout(IDLE_TIMEOUT)
            _Connection(sock, self._handler, self.stopping, self._on_client_gone).run()
        finally:
            with self._lock:
                self._conns.discard(sock)
                self._threads.discard(threading.current_thread())
            try:
                sock.close()
            except OSError:
                pass


class _Connection:
    """Requests one after the other on one socket (keep-alive), each answered by the handler."""

    def __init__(self, sock: socket.socket, handler: Handler, stopping: threading.Event,
                 on_client_gone: Callable[[], Callable[[], None]]) -> None:
        self.sock = sock
        self.handler = handler
        self.stopping = stopping
        self.on_client_gone = on_client_gone
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                request = self._read_request()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint if 400 <= exc.error_status_hint < 600 else 400
                self._refuse(status, _protocol_message(status, str(exc)))
                return
            except _TooLarge as exc:
                self._refuse(413, str(exc))
                return
            except (OSError, _ClientClosed):
                return
            if request is None:
                return
            responder = Responder(self.sock, self.h11, request, self.stopping, self.on_client_gone())
            self.handler(request, responder)
            if not responder.finished:  # a handler that forgot to finish: end the body cleanly
                if not responder.started:
                    responder.send(500, b"", "text/plain")
                else:
                    responder.end()
            if responder.broken or self.h11.our_state is not h11.DONE or self.h11.their_state is not h11.DONE:
                if not responder.broken:
                    _close_gently(self.sock, linger=LINGER)
                return
            self.h11.start_next_cycle()

    def _next_event(self) -> h11.Event:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = self.sock.recv(65536)
            self.h11.receive_data(data)
            if not data and self.h11.their_state is h11.IDLE:
                raise _ClientClosed

    def _read_request(self) -> Request | None:
        event = self._next_event()
        if isinstance(event, h11.ConnectionClosed):
            return None
        if not isinstance(event, h11.Request):  # pragma: no cover - h11 yields a Request first
            raise h11.RemoteProtocolError("expected a request", error_status_hint=400)
        if not event.http_version.startswith(b"1."):
            raise h11.RemoteProtocolError(f"HTTP/{event.http_version.decode()} is not supported", error_status_hint=505)
        headers = tuple((k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in event.headers)
        declared = next((v for k, v in headers if k == "content-length"), None)
        if declared is not None and int(declared) > MAX_BODY:  # h11 has checked it is a number
            raise _TooLarge(f"Request body of {declared} bytes is larger than this server accepts ({MAX_BODY} bytes).")
        if self.h11.they_are_waiting_for_100_continue:
            self.sock.sendall(self.h11.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue")))
        body = bytearray()
        while True:
            part = self._next_event()
            if isinstance(part, h11.Data):
                body += part.data
                if len(body) > MAX_BODY:
                    raise _TooLarge(f"Request body is larger than this server accepts ({MAX_BODY} bytes).")
            elif isinstance(part, h11.EndOfMessage):
                break
            else:  # ConnectionClosed in the middle of a body
                raise _ClientClosed
        return Request(event.method.decode("ascii"), event.target.decode("latin-1"), event.http_version.decode("ascii"), headers, bytes(body))

    def _refuse(self, status: int, message: str) -> None:
        """Answer a request we could not (or would not) read, then close, letting the client read the answer."""
        if self.h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            _close_gently(self.sock, linger=0.0)
            return
        body = json.dumps(error_body(message)).encode("utf-8")
        headers = [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Server", SERVER_NAME),
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),
        ]
        try:
            data = self.h11.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
            self.sock.sendall(data + body)
        except (OSError, h11.LocalProtocolError):
            pass
        _close_gently(self.sock, linger=LINGER)


class _TooLarge(Exception):
    pass


class _ClientClosed(Exception):
    pass


def _protocol_message(status: int, detail: str) -> str:
    if status == 505:
        return f"HTTP version not supported: {detail}; speak HTTP/1.1."
    if status == 431:
        return f"Request header fields too large (more than {MAX_HEAD} bytes)."
    return f"Malformed HTTP request: {detail}."


def _close_gently(sock: socket.socket, *, linger: float) -> None:
    """Half-close (FIN) so the client reads everything sent, optionally drain what it still sends, close."""
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    if linger > 0:
        deadline = time.monotonic() + linger
        try:
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                if not sock.recv(65536):
                    break
        except OSError:
            pass
    try:
        sock.close()
    except OSError:
        pass


def _drain_outgoing(sock: socket.socket, timeout: float) -> None:
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
            (queued,) = struct.unpack("i", fcntl.ioctl(sock.fileno(), request, b"\0\0\0\0"))
        except OSError:
            return
        if queued == 0:
            return
        time.sleep(0.001)
