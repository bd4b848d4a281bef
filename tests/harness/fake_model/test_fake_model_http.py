"""The fake model's HTTP, checked with raw bytes on a socket: framing, errors, keep-alive, and a bounded fuzz run.

Every check sends exact bytes, half-closes, and reads until the server closes: what HTTP/1.1 (RFC 9112) and
HTTP semantics (RFC 9110) say a server answers, whatever client is on the other side.
"""

from __future__ import annotations

import email.utils
import json
import random
import socket
import threading
import time

import pytest

from course import fake_model

CHAT = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
STREAM = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true}'


@pytest.fixture(scope="module")
def fm():
    with fake_model.FakeModel() as server:
        yield server


def exchange(port: int, data: bytes, *, timeout: float = 20.0, piece: int = 0) -> bytes:
    """Send the bytes (in pieces of `piece` bytes if > 0), half-close, and read everything until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            if piece:
                for i in range(0, len(data), piece):
                    s.sendall(data[i : i + piece])
            else:
                s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer and close before reading everything (413)
        out = bytearray()
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:
            out += b"<RST>"
        return bytes(out)


def post(body: bytes, *headers: str, target: str = "/v1/chat/completions", version: str = "1.1") -> bytes:
    lines = [f"POST {target} HTTP/{version}", "Host: 127.0.0.1", "Content-Type: application/json", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def get(target: str, *headers: str, method: str = "GET", version: str = "1.1") -> bytes:
    return ("\r\n".join([f"{method} {target} HTTP/{version}", "Host: 127.0.0.1", *headers]) + "\r\n\r\n").encode("latin-1")


def split_head(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """The first final response's status, headers (lowercased names) and everything after its head."""
    while raw.startswith(b"HTTP/1.1 1"):  # skip interim (1xx) responses
        raw = raw[raw.index(b"\r\n\r\n") + 4 :]
    assert raw.startswith(b"HTTP/1.1 "), f"not an HTTP/1.1 response: {raw[:80]!r}"
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split(" ")[1]), headers, rest


def error_json(rest: bytes) -> dict:
    body = json.loads(rest)
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]


# ---- the table of raw checks -----------------------------------------------------------------------------


def _ok_json(raw: bytes) -> None:
    status, headers, rest = split_head(raw)
    assert status == 200, raw[:200]
    assert int(headers["content-length"]) == len(rest)
    json.loads(rest)


def _status(want: int, *, error_shape: bool = True):
    def check(raw: bytes) -> None:
        status, headers, rest = split_head(raw)
        assert status == want, f"status {status}, want {want}: {raw[:300]!r}"
        if error_shape:
            assert headers.get("content-type", "").startswith("application/json")
            error_json(rest[: int(headers["content-length"])])

    return check


def _date(raw: bytes) -> None:
    _status_, headers, _ = split_head(raw)
    assert email.utils.parsedate_to_datetime(headers["date"]).tzinfo is not None, headers


def _head_no_body(raw: bytes) -> None:
    status, headers, rest = split_head(raw)
    assert status == 200 and int(headers["content-length"]) > 0 and rest == b"", raw


def _http10(raw: bytes) -> None:
    status, headers, rest = split_head(raw)
    assert status == 200 and "chunked" not in headers.get("transfer-encoding", ""), raw[:300]
    assert rest.endswith(b"data: [DONE]\n\n"), rest[-80:]  # close-delimited: the raw events, no chunk framing


def _chunked_stream(raw: bytes) -> None:
    status, headers, rest = split_head(raw)
    assert status == 200 and headers["transfer-encoding"] == "chunked" and headers["content-type"].startswith("text/event-stream")
    assert rest.endswith(b"\r\n0\r\n\r\n") and b"data: [DONE]" in rest


def _two_answers(raw: bytes) -> None:
    assert raw.count(b"HTTP/1.1 200 OK\r\n") == 2, raw[:400]


def _continue_then_ok(raw: bytes) -> None:
    assert raw.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), raw[:100]


def _no_continue_413(raw: bytes) -> None:
    assert b"100 Continue" not in raw
    _status(413)(raw)


def _closes(raw: bytes) -> None:
    status, headers, _ = split_head(raw)
    assert status == 200 and headers.get("connection", "").lower() == "close"


def _silent_close(raw: bytes) -> None:
    assert raw == b"" or raw.startswith(b"HTTP/1.1 400 "), raw[:100]


def _405_allow(raw: bytes) -> None:
    status, headers, rest = split_head(raw)
    assert status == 405 and headers["allow"] == "POST", headers
    assert error_json(rest)["message"] == "Invalid method for URL (GET /v1/chat/completions)"


def _404_invalid_url(raw: bytes) -> None:
    status, _, rest = split_head(raw)
    assert status == 404 and error_json(rest)["message"] == "Invalid URL (POST /v1/completions)"


BIG = fake_model.MAX_BODY + 1
RAW_CHECKS = {
    "get models": (get("/v1/models"), _ok_json),
    "date header": (get("/v1/models"), _date),
    "head has no body": (get("/v1/models", method="HEAD"), _head_no_body),
    "head on a POST-only path": (get("/v1/chat/completions", method="HEAD"), _status(405, error_shape=False)),
    "http/1.0 stream is not chunked": (post(STREAM, version="1.0"), _http10),
    "http/1.0 keep-alive asked": (post(CHAT, "Connection: keep-alive", version="1.0"), _ok_json),
    "http/1.1 stream is chunked": (post(STREAM), _chunked_stream),
    "non-streaming answer": (post(CHAT), _ok_json),
    "pipelined keep-alive": (post(CHAT) + post(CHAT), _two_answers),
    "connection close": (post(CHAT, "Connection: close"), _closes),
    "query string ignored": (post(CHAT, target="/v1/chat/completions?x=1"), _ok_json),
    "absolute-form target": (post(CHAT, target="http://127.0.0.1/v1/chat/completions"), _ok_json),
    "expect 100-continue": (post(CHAT, "Expect: 100-continue"), _continue_then_ok),
    "chunked request body": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                             + b"%x\r\n%s\r\n0\r\n\r\n" % (len(CHAT), CHAT), _ok_json),
    "chunked body with trailer": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  + b"%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n" % (len(CHAT), CHAT), _ok_json),
    "request sent 1 byte at a time": (post(CHAT), _ok_json),  # sent with piece=1 below
    "malformed request line": (b"GARBAGE\r\n\r\n", _status(400)),
    "request line without version": (b"GET /v1/models\r\n\r\n", _status(400)),
    "unsupported version": (b"GET /v1/models HTTP/2.0\r\nHost: x\r\n\r\n", _status(505)),
    "content-length not a number": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", _status(400)),
    "negative content-length": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", _status(400)),
    "conflicting content-lengths": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", _status(400)),
    "bad chunk size": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", _status(400)),
    "unsupported transfer-coding": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", _status(501)),
    "header without colon": (b"GET /v1/models HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", _status(400)),
    "space before colon": (b"GET /v1/models HTTP/1.1\r\nHost : x\r\n\r\n", _status(400)),
    "missing host": (b"GET /v1/models HTTP/1.1\r\n\r\n", _status(400)),
    "1 MB header": (b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n", _status(431)),
    "too many headers": (b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 60) for i in range(2000)) + b"\r\n",
                         _status(431)),
    "oversized body": (post(b"{}").replace(b"Content-Length: 2", b"Content-Length: %d" % BIG) + b"{" * 4096, _status(413)),
    "oversized body after expect": (post(b"").replace(b"Content-Length: 0", b"Content-Length: %d\r\nExpect: 100-continue" % BIG), _no_continue_413),
    "body not JSON": (post(b"{nope"), _status(400)),
    "body not UTF-8": (post(b'{"model": "\xff"}'), _status(400)),
    "empty body": (post(b""), _status(400)),
    "unknown path": (post(CHAT, target="/v1/completions"), _404_invalid_url),
    "wrong method": (get("/v1/chat/completions"), _405_allow),
    "closed inside the head": (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le", _silent_close),
    "closed inside the body": (post(CHAT)[:-5], _silent_close),
}


@pytest.mark.parametrize("name", list(RAW_CHECKS))
def test_raw_http(fm, name):
    data, check = RAW_CHECKS[name]
    check(exchange(fm.port, data, piece=1 if name == "request sent 1 byte at a time" else 0))


def test_server_still_serves_after_raw_checks(fm):
    _ok_json(exchange(fm.port, get("/v1/models")))


# ---- a bounded fuzz run -------------------------------------------------------------------------------------


def fuzz_request(rng: random.Random) -> bytes:
    """A request that is random, malformed, or a plausible one with random damage."""
    base = rng.choice([post(CHAT), post(STREAM), get("/v1/models"), post(b'{"model": "m", "messages": []}'),
                       b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n"])
    how = rng.randrange(6)
    if how == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if how == 1:  # flip some bytes
        data = bytearray(base)
        for _ in range(rng.randrange(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if how == 2:  # cut short
        return base[: rng.randrange(len(base))]
    if how == 3:  # insert junk somewhere
        at = rng.randrange(len(base))
        return base[:at] + rng.choice([b"\r\n", b"\n", b":", b" ", b"\x00", b"\r\n\r\n", b"0\r\n", b"-1"]) + base[at:]
    if how == 4:  # random JSON-ish body
        body = json.dumps(rng.choice([None, [], {}, {"model": 1}, {"messages": "x"}, {"model": "m", "messages": [{"role": "tool"}]},
                                      {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": rng.random()}])).encode()
        return post(body)
    return base


def test_fuzz_every_request_gets_a_status_or_a_clean_close():
    """Thousands of malformed or random requests: each is answered with a status or closed cleanly, and the
    server keeps serving with no connection or thread left behind."""
    rng = random.Random(20261130)
    with fake_model.FakeModel() as server:
        for n in range(2500):
            data = fuzz_request(rng)
            raw = exchange(server.port, data)
            assert raw == b"" or raw.startswith(b"HTTP/1.1 "), f"request #{n} {data[:120]!r} got {raw[:120]!r}"
            if raw.startswith(b"HTTP/1.1 "):
                status = split_head(raw)[0]
                assert 200 <= status < 600, f"request #{n}: status {status}"
                assert status != 500, f"request #{n} {data[:200]!r} made the fake fail: {raw[:400]!r}"
        _ok_json(exchange(server.port, get("/v1/models")))
        deadline = time.monotonic() + 10
        while server.open_connections and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.open_connections == 0, f"{server.open_connections} connections still open after the fuzz run"
        mine = f"fake-model-conn:{server.port}"
        while any(t.name == mine for t in threading.enumerate()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not any(t.name == mine for t in threading.enumerate()), "connection threads left behind after the fuzz run"
