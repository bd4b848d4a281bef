"""Byte-exact HTTP for the ag01 catalog: a loopback server that sends scripted bytes and counts the
connections its client keeps open, and builders for the answers it sends."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable


class PiecesReader:
    """A binary stream that returns exactly the given pieces (any iterable of bytes), one per read, then b"".

    A read that asks for fewer bytes than the next piece holds gets its start; the rest comes next.
    """

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self._pieces = filter(None, pieces)  # an empty read would mean the end
        self._rest = b""

    def read(self, n: int = -1) -> bytes:
        piece = self._rest or next(self._pieces, b"")
        if n is not None and 0 <= n < len(piece):  # a reader never returns more than asked
            self._rest = piece[n:]
            return piece[:n]
        self._rest = b""
        return piece


# ---- raw HTTP server --------------------------------------------------------------------------------


class Answer:
    """What RawServer sends for one request: exact bytes, then how the connection ends.

    end: "keep" waits for the client's next request or for it to close the connection; "close"
    half-closes (the client reads EOF) and waits for the client to close; "reset" aborts with a RST;
    "stall" sends nothing more, and keeps the connection open until the server stops.
    """

    def __init__(self, data: bytes, end: str = "keep") -> None:
        self.data = data
        self.end = end


def sse_head(status: int = 200, reason: str = "OK", chunked: bool = True, extra: str = "") -> bytes:
    framing = "Transfer-Encoding: chunked\r\n" if chunked else ""
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/event-stream\r\n{framing}{extra}\r\n").encode()


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse_answer(events: list[str], *, done: bool = True, status: int = 200, reason: str = "OK") -> Answer:
    """A complete, correctly framed streamed answer: one chunk per event, [DONE] when `done`."""
    body = b"".join(chunk(f"data: {e}\n\n".encode()) for e in events + (["[DONE]"] if done else []))
    return Answer(sse_head(status, reason) + body + b"0\r\n\r\n")


def json_answer(status: int, reason: str, payload: str, extra: str = "") -> Answer:
    body = payload.encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return Answer(head.encode() + body)


class RawServer:
    """An HTTP server on 127.0.0.1 that answers each request with the next scripted Answer, byte for byte.

    It counts the connections the client still holds open (`open_connections`), and records each
    request's head and body (`requests`).
    """

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._answers: list[Answer] = []
        self.requests: list[tuple[bytes, bytes]] = []
        self._open = 0
        self._lock = threading.Condition()  # notified whenever a connection closes
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def script(self, *answers: Answer) -> None:
        with self._lock:
            self._answers.extend(answers)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._open

    def wait_all_closed(self, timeout: float = 1.0) -> bool:
        """True once the client has closed every connection (waiting up to `timeout` seconds)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._open == 0, timeout)

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below
        self._listener.close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(2.0)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self._open += 1
                self._conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        counted = True
        buffer = b""
        try:
            while True:
                request, buffer = self._read_request(conn, buffer)
                if request is None:
                    return  # the client closed the connection
                with self._lock:
                    self.requests.append(request)
                    answer = self._answers.pop(0) if self._answers else json_answer(
                        500, "Internal Server Error", '{"error": {"message": "nothing scripted", "type": "server_error"}}')
                conn.sendall(answer.data)
                if answer.end == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    with self._lock:
                        self._open -= 1
                        self._lock.notify_all()
                    counted = False
                    conn.close()
                    return
                if answer.end == "stall":
                    self._stop.wait()
                    return
                if answer.end == "close":
                    conn.shutdown(socket.SHUT_WR)
                    while conn.recv(65536):  # until the client closes its end
                        pass
                    return
        except OSError:
            return
        finally:
            if counted:
                with self._lock:
                    self._open -= 1
                    self._lock.notify_all()
            with contextlib.suppress(OSError):
                conn.close()

    @staticmethod
    def _read_request(conn: socket.socket, buffer: bytes) -> tuple[tuple[bytes, bytes] | None, bytes]:
        while b"\r\n\r\n" not in buffer:
            data = conn.recv(65536)
            if not data:
                return None, b""
            buffer += data
        head, _, rest = buffer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(rest) < length:
            data = conn.recv(65536)
            if not data:
                return None, b""
            rest += data
        return (head, rest[:length]), rest[length:]
