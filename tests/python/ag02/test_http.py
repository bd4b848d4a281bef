"""ag02 catalog, over HTTP: the adapter behind the given stdlib transport, against a loopback server.

The server answers each connection with scripted bytes (chunked or not, any line ends, cut or reset
where the case says), so what the adapter sees is what a real socket delivers.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from agent.responses import provider
from agent.responses.transport import HTTPTransport
from agent.responses.types import Message, OpenFailure, ResponseFailure

import ag02_samples as samples

HISTORY = [Message("user", "The test for add() fails. Find the bug and fix it.")]


@dataclass
class Reply:
    head: bytes
    pieces: list[bytes]
    end: str = "close"  # close | reset | hang-up-before-head


def sse(events: list[dict], line_end: str = "\n", comments: bool = False, multiline: bool = False) -> bytes:
    out = []
    if comments:
        out.append(f": keep-alive{line_end}{line_end}")
    for event in events:
        data = json.dumps(event)
        if multiline:  # JSON may be split over data lines: they are joined with a line feed
            data = data.replace(', "', f',{line_end}data: "', 1)
        out.append(f"event: {event['type']}{line_end}data: {data}{line_end}{line_end}")
        if comments:
            out.append(f": ping{line_end}")
    return "".join(out).encode("utf-8")


def stream_reply(body: bytes, framing: str = "chunked", size: int = 7, end: str = "close") -> Reply:
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
    if framing == "chunked":
        head += "Transfer-Encoding: chunked\r\n"
        pieces = [f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces]
        if end == "close":
            pieces.append(b"0\r\n\r\n")
    elif framing == "length":
        head += f"Content-Length: {len(body)}\r\n"
    return Reply((head + "\r\n").encode(), pieces, end)


def error_reply(status: int, body: str, reason: str = "Error") -> Reply:
    data = body.encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    return Reply(head.encode(), [data])


class Loopback:
    """127.0.0.1 server: each connection reads one request and gets the next scripted reply."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[bytes, dict]] = []

    async def __aenter__(self) -> "Loopback":
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
            self.requests.append((head, json.loads(await reader.readexactly(length))))
            reply = self.replies.pop(0)
            if reply.end != "hang-up-before-head":
                # Written at once: chunked framing keeps each piece a chunk of its own, however TCP
                # groups the bytes, so the client still meets every split.
                writer.write(reply.head + b"".join(reply.pieces))
                await writer.drain()
            if reply.end == "reset":
                if reply.head or reply.pieces:
                    # A reset may discard what the client has not read yet: let it read the events first.
                    await asyncio.sleep(0.05)
                linger = struct.pack("ii", 1, 0)  # closing with a zero linger sends RST, not FIN
                writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                writer.transport.abort()
            else:
                writer.close()
        except (ConnectionError, asyncio.IncompleteReadError):
            writer.transport.abort()


@contextmanager
def refused_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound but not listening: a connection to it is refused. The
    port stays bound until the block ends, so no server of this run (nor this test's own client)
    can be given it in the meantime, as a port freed at once could be."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


async def run(url: str, recorder: samples.Recorder, timeout: float = 10.0) -> Message:
    transport = HTTPTransport(url, "sk-test", timeout=timeout)
    p = provider.ResponsesProvider(transport, samples.MODEL, report=recorder, sleep=recorder.sleep, rng=random.Random(1))
    return await p.complete(list(HISTORY), samples.tools())


def outcome(replies: list[Reply], url: str | None = None, timeout: float = 10.0) -> tuple[object, Loopback, samples.Recorder]:
    """(the Message or the exception, the server, the recorder)."""
    recorder = samples.Recorder()

    async def main() -> tuple[object, Loopback]:
        async with Loopback(*replies) as server:
            try:
                got: object = await run(url or server.url, recorder, timeout)
            except Exception as exc:  # noqa: BLE001 - the failure is what the cases check
                got = exc
            return got, server

    got, server = asyncio.run(main())
    return got, server, recorder


STREAMS = {
    "chunked_lf_7": lambda: stream_reply(sse(samples.events("single_call")), size=7),
    "crlf_comments_multiline": lambda: stream_reply(sse(samples.events("interleaved_calls"), "\r\n", comments=True, multiline=True), size=5),
    "lone_cr_3_bytes": lambda: stream_reply(sse(samples.events("text_only"), "\r"), size=3),
    "content_length": lambda: stream_reply(sse(samples.events("refusal")), framing="length", size=4096),
    "until_close": lambda: stream_reply(sse(samples.events("valid_then_valid")), framing="none", size=100),
    "large_arguments": lambda: stream_reply(sse(samples.events("arguments_at_limit")), size=65536),
}
SEQUENCE_OF = {"chunked_lf_7": "single_call", "crlf_comments_multiline": "interleaved_calls", "lone_cr_3_bytes": "text_only",
               "content_length": "refusal", "until_close": "valid_then_valid", "large_arguments": "arguments_at_limit"}


@pytest.mark.parametrize("case", list(STREAMS))
def test_http_streams(case):
    got, server, _ = outcome([STREAMS[case]()])
    want = samples.sequence(SEQUENCE_OF[case])["expect"]["message"]
    assert isinstance(got, Message), f"{case}: got {type(got).__name__}: {got}, want the decision of {SEQUENCE_OF[case]}"
    assert samples.message_form(got) == want, f"{case}: decision differs:\n got  {str(samples.message_form(got))[:400]}\n want {str(want)[:400]}"
    assert len(server.requests) == 1, f"{case}: one request, got {len(server.requests)}"
    head, body = server.requests[0]
    assert head.startswith(b"POST /v1/responses HTTP/1.1\r\n"), f"{case}: POST to {{base_url}}/responses: {head[:60]!r}"
    assert b"\r\nAuthorization: Bearer sk-test\r\n" in head, f"{case}: the key as a bearer token: {head!r}"
    assert body["stream"] is True and body["store"] is False and body["input"][0]["content"] == HISTORY[0].content, (
        f"{case}: the body is build_request's: {str(body)[:200]}")


ERRORS = {
    "status_429": (error_reply(429, '{"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}'), 429, "Rate limit reached"),
    "status_401_plain": (error_reply(401, "Unauthorized\n"), 401, "Unauthorized"),
    "status_400_other_json": (error_reply(400, '{"detail": "bad input"}'), 400, "bad input"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_http_refusals_not_retried(case):
    reply, status, said = ERRORS[case]
    got, server, recorder = outcome([reply, stream_reply(sse(samples.events("text_only")))])
    assert isinstance(got, OpenFailure), f"{case}: got {type(got).__name__}: {got}, want OpenFailure"
    assert got.status == status and said in str(got), f"{case}: status {got.status}, message {str(got)!r}; want {status} and {said!r}"
    assert len(server.requests) == 1 and recorder.sleeps == [], f"{case}: not retried: {len(server.requests)} requests"


@pytest.mark.parametrize("case", ["503_then_stream", "hang_up_then_stream", "reset_then_stream", "garbage_head_then_stream"])
def test_http_opening_retried(case):
    first = {
        "503_then_stream": error_reply(503, '{"error": {"message": "overloaded", "type": "server_error"}}'),
        "hang_up_then_stream": Reply(b"", [], "hang-up-before-head"),
        "reset_then_stream": Reply(b"", [], "reset"),
        "garbage_head_then_stream": Reply(b"hello\r\n\r\n", []),
    }[case]
    got, server, recorder = outcome([first, stream_reply(sse(samples.events("text_only")))])
    assert isinstance(got, Message) and got.content.startswith("The bug"), f"{case}: got {got!r}, want the text_only decision"
    assert len(server.requests) == 2 and len(recorder.sleeps) == 1, (
        f"{case}: a failed opening is retried once: {len(server.requests)} requests, waits {recorder.sleeps}")


def test_http_connection_refused():
    with refused_url() as url:
        got, _, recorder = outcome([], url=url)
    assert isinstance(got, OpenFailure) and got.status is None, f"nothing listening: got {got!r}, want OpenFailure with status None"
    assert len(recorder.sleeps) == 2, f"three attempts, two waits: {recorder.sleeps}"


@pytest.mark.parametrize("case", ["reset_mid_arguments", "cut_mid_chunk", "short_content_length", "malformed_data",
                                  "event_without_blank_line", "bad_chunk_size"])
def test_http_stream_failures_not_retried(case):
    events = samples.events("single_call")
    body = sse(events)
    cut = body.rindex(b"event: response.completed")
    reply, want = {
        "reset_mid_arguments": (stream_reply(sse(samples.events("reset_mid_arguments")), end="reset"), "transport"),
        "cut_mid_chunk": (Reply(stream_reply(body).head, [f"{len(body):x}\r\n".encode() + body[:cut + 30]]), "transport"),
        "short_content_length": (Reply(b"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n", [body[:cut]]), "transport"),
        "malformed_data": (stream_reply(body[:cut] + b"data: {not json\n\n"), "malformed_event"),
        "event_without_blank_line": (stream_reply(body[:-1]), "stream_ended"),
        "bad_chunk_size": (Reply(stream_reply(body).head, [b"zz\r\n" + body]), "transport"),
    }[case]
    got, server, recorder = outcome([reply, stream_reply(sse(samples.events("text_only")))])
    assert isinstance(got, ResponseFailure) and got.code == want, f"{case}: got {type(got).__name__}: {got}, want failure {want!r}"
    assert len(server.requests) == 1 and recorder.sleeps == [], (
        f"{case}: the stream was acquired, so nothing is retried: {len(server.requests)} requests")
